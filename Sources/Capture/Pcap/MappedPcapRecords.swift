import CPcap
import Foundation

/// The records of a classic pcap file read from a memory map instead of through libpcap's stdio
/// reads: no read(2) per 4 KiB page, no copy of each record into libpcap's buffer. libpcap still opens
/// the file and checks its header (version, link type, snap length); this only takes over the record
/// loop, and only where libpcap's loop (`pcap_next_packet` in libpcap 1.10's sf-pcap.c) does nothing
/// but read: file version 2.4, the 16-byte record header, no filter, and a link type whose records
/// libpcap neither rewrites (pseudo-headers of other-endian files) nor sizes specially
/// (`max_snaplen_for_dlt`). Every record, length, time stamp and error message is libpcap's: the
/// checks below follow its loop one for one.
///
/// The map covers the file as it was when opened; a file still growing is read to that size.
struct MappedPcapRecords {
    /// libpcap's MAXIMUM_SNAPLEN: the largest record it accepts for the link types handled here.
    static let maximumSnapLength: UInt32 = 262_144

    let base: UnsafeRawPointer
    let size: Int
    /// The file's byte order is not the host's (`pcap_is_swapped`).
    let swapped: Bool
    /// Time stamps in microseconds (scaled to nanoseconds as libpcap does when asked for them).
    let micro: Bool
    /// The snap length libpcap adjusted at open (`pcap_snapshot`).
    let snapshot: Int32

    /// Maps the file behind an open libpcap handle when its record loop can be taken over; nil otherwise
    /// (the caller reads through libpcap).
    init?(path: String, handle p: OpaquePointer, magic: UInt32, filtered: Bool) {
        guard !filtered, pcap_major_version(p) == 2, pcap_minor_version(p) == 4 else { return nil }
        switch magic {
        case 0xa1b2_c3d4, 0xd4c3_b2a1: micro = true
        case 0xa1b2_3c4d, 0x4d3c_b2a1: micro = false
        default: return nil  // the patched and other variants have other record headers
        }
        swapped = pcap_is_swapped(p) != 0
        let dlt = pcap_datalink(p)
        // Sized otherwise by libpcap (DBUS 231, EBHSCR 279, USBPCAP 249) or length-fixed (USB_LINUX_MMAPPED 220).
        if [231, 279, 249, 220].contains(dlt) { return nil }
        // Pseudo-headers libpcap swaps in other-endian files (PFLOG, LINUX_SLL, LINUX_SLL2, USB_LINUX, NFLOG).
        if swapped, [117, 113, 276, 189, 239].contains(dlt) { return nil }
        snapshot = pcap_snapshot(p)
        guard snapshot > 0 else { return nil }
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size >= 24 else { return nil }
        size = Int(info.st_size)
        guard let mapped = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), mapped != MAP_FAILED else { return nil }
        madvise(mapped, size, MADV_SEQUENTIAL)
        base = UnsafeRawPointer(mapped)
    }

    /// Gives back the pages of `range` (page-aligned, already read): they leave this process's resident
    /// set and stay in the page cache, so the resident memory does not grow with the file.
    func release(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        madvise(UnsafeMutableRawPointer(mutating: base + range.lowerBound), range.count, MADV_DONTNEED)
    }

    func unmap() {
        munmap(UnsafeMutableRawPointer(mutating: base), size)
    }

    /// One record header as libpcap reads it.
    struct Record {
        var seconds: Int64
        var fraction: Int64
        var captured: Int
        var wire: Int
        /// Bytes the record takes in the file after its header (more than `captured` when it was cut
        /// to the snap length).
        var stored: Int
    }

    enum Next {
        case record(Record)
        /// libpcap's error message for the record.
        case failure(String)
    }

    /// The record whose header starts at `offset`: nil at the end of the file, else the record or
    /// libpcap's error message for it.
    @inline(__always)
    func record(at offset: Int) -> Next? {
        let remaining = size - offset
        if remaining == 0 { return nil }
        guard remaining >= 16 else {
            return .failure("truncated dump file; tried to read 16 header bytes, only got \(remaining)")
        }
        var sec = base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        var frac = base.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
        var caplen = base.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
        var len = base.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)
        var r: Record
        if swapped {
            // SWAPLONG yields an unsigned int: the seconds and fraction are zero-extended.
            sec = sec.byteSwapped
            frac = frac.byteSwapped
            caplen = caplen.byteSwapped
            len = len.byteSwapped
            r = Record(seconds: Int64(sec), fraction: Int64(frac), captured: 0, wire: Int(len), stored: 0)
        } else {
            // The file's bpf_int32 fields, sign-extended.
            r = Record(seconds: Int64(Int32(bitPattern: sec)), fraction: Int64(Int32(bitPattern: frac)), captured: 0,
                       wire: Int(len), stored: 0)
        }
        if micro { r.fraction *= 1000 }
        let data = remaining - 16
        if caplen > Self.maximumSnapLength {
            return .failure(caplen > UInt32(bitPattern: snapshot)
                ? "invalid packet capture length \(caplen), bigger than snaplen of \(snapshot)"
                : "invalid packet capture length \(caplen), bigger than maximum of \(Self.maximumSnapLength)")
        }
        if caplen > UInt32(bitPattern: snapshot) {
            // libpcap keeps the first `snapshot` bytes and skips the rest of the record.
            guard data >= Int(snapshot) else {
                return .failure("truncated dump file; tried to read \(snapshot) captured bytes, only got \(data)")
            }
            guard data >= Int(caplen) else {
                return .failure("truncated dump file; tried to read \(caplen) captured bytes, only got \(data)")
            }
            r.captured = Int(snapshot)
            r.stored = Int(caplen)
            return .record(r)
        }
        guard data >= Int(caplen) else {
            return .failure("truncated dump file; tried to read \(caplen) captured bytes, only got \(data)")
        }
        r.captured = Int(caplen)
        r.stored = Int(caplen)
        return .record(r)
    }
}
