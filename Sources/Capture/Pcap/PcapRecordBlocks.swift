import CPcap
import Foundation
import OSLayer

/// The records of a classic pcap file read in large blocks (pread(2) into one buffer, reused) instead
/// of through libpcap's stdio reads: no read(2) per 4 KiB page and no copy of each record into
/// libpcap's buffer. libpcap still opens the file and checks its header (version, link type, snap
/// length); this only takes over the record loop, and only where libpcap's loop (`pcap_next_packet` in
/// libpcap 1.10's sf-pcap.c) does nothing but read: file version 2.4, the 16-byte record header, no
/// filter, and a link type whose records libpcap neither rewrites (pseudo-headers of other-endian files)
/// nor sizes specially (`max_snaplen_for_dlt`). Every record, length, time stamp and error message is
/// libpcap's: the checks below follow its loop one for one.
///
/// Blocks rather than a memory map of the file (issue 27): the map cost a page fault per 64 KiB, and
/// giving its pages back (to keep the resident set flat) an unmapping whose TLB shootdowns interrupted
/// the matching thread; a block read into the same buffer leaves the records in the cache. The file is
/// read to its size at opening (a file still growing); one that shrinks meanwhile ends where it ends.
final class PcapRecordBlocks {
    /// libpcap's MAXIMUM_SNAPLEN: the largest record it accepts for the link types handled here.
    static let maximumSnapLength: UInt32 = 262_144
    /// 256 KiB a read: 760 reads for a 200 MB capture, and the buffer stays in the processor's cache.
    static let defaultBlockSize = 1 << 18

    /// The file's size when it was opened (less if it shrank since).
    private(set) var size: Int
    /// The file's byte order is not the host's (`pcap_is_swapped`).
    let swapped: Bool
    /// Time stamps in microseconds (scaled to nanoseconds as libpcap does when asked for them).
    let micro: Bool
    /// The snap length libpcap adjusted at open (`pcap_snapshot`).
    let snapshot: Int32
    private let file: ReadOnlyFile
    private let blockSize: Int
    /// Room for a block beside the largest record (its header and `maximumSnapLength` bytes).
    private let capacity: Int
    private let buffer: UnsafeMutableRawPointer
    /// The file offsets of the bytes in `buffer`: [start, end).
    private var start = 0
    private var end = 0

    /// Opens the file behind a libpcap handle when its record loop can be taken over; nil otherwise
    /// (the caller reads through libpcap). `blockSize`: tests read in small blocks to cross their edges.
    init?(path: String, handle p: OpaquePointer, magic: UInt32, filtered: Bool, blockSize: Int = PcapRecordBlocks.defaultBlockSize) {
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
        guard let file = try? ReadOnlyFile(path: path, sequential: true), file.size >= 24 else { return nil }
        self.file = file
        size = file.size
        self.blockSize = max(1, blockSize)
        capacity = self.blockSize + 16 + Int(Self.maximumSnapLength)
        buffer = .allocate(byteCount: capacity, alignment: 64)
    }

    deinit {
        buffer.deallocate()
    }

    /// The file's bytes [offset, offset + count) (`count` at most `capacity`), valid until the next call;
    /// nil when the file ends before them (a read error ends it too: `size` becomes where it ended).
    private func bytes(at offset: Int, count: Int) -> UnsafeRawPointer? {
        if offset >= start, offset + count <= end { return UnsafeRawPointer(buffer + (offset - start)) }
        if offset >= start, offset <= end {
            // Keep the bytes from `offset` on (the start of a record cut by the block's end).
            let kept = end - offset
            if kept > 0, offset > start { buffer.copyMemory(from: buffer + (offset - start), byteCount: kept) }
        } else {
            end = offset
        }
        start = offset
        while end - start < count {
            let want = min(blockSize, capacity - (end - start), size - end)
            guard want > 0 else { return nil }
            // Any failure reads as the file's end (EINTR is retried in OSLayer).
            let n = (try? file.read(into: buffer + (end - start), count: want, at: end)) ?? -1
            guard n > 0 else {
                size = end  // shrank, or unreadable from here: the file ends here
                return nil
            }
            end += n
        }
        return UnsafeRawPointer(buffer + (offset - start))
    }

    /// One record as libpcap reads it.
    struct Record {
        var seconds: Int64
        var fraction: Int64
        var captured: Int
        var wire: Int
        /// Bytes the record takes in the file after its header (more than `captured` when it was cut
        /// to the snap length).
        var stored: Int
        /// Its `captured` bytes, valid until the next `record(at:)`.
        var data: UnsafeRawPointer
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
        guard let header = bytes(at: offset, count: 16) else { return afterShrinking(at: offset) }
        var sec = header.loadUnaligned(fromByteOffset: 0, as: UInt32.self)
        var frac = header.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
        var caplen = header.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
        var len = header.loadUnaligned(fromByteOffset: 12, as: UInt32.self)
        var r: Record
        if swapped {
            // SWAPLONG yields an unsigned int: the seconds and fraction are zero-extended.
            sec = sec.byteSwapped
            frac = frac.byteSwapped
            caplen = caplen.byteSwapped
            len = len.byteSwapped
            r = Record(seconds: Int64(sec), fraction: Int64(frac), captured: 0, wire: Int(len), stored: 0, data: header)
        } else {
            // The file's bpf_int32 fields, sign-extended.
            r = Record(seconds: Int64(Int32(bitPattern: sec)), fraction: Int64(Int32(bitPattern: frac)), captured: 0,
                       wire: Int(len), stored: 0, data: header)
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
        } else {
            guard data >= Int(caplen) else {
                return .failure("truncated dump file; tried to read \(caplen) captured bytes, only got \(data)")
            }
            r.captured = Int(caplen)
            r.stored = Int(caplen)
        }
        guard let whole = bytes(at: offset, count: 16 + r.captured) else { return afterShrinking(at: offset) }
        r.data = whole + 16
        return .record(r)
    }

    /// The file ended before a record's bytes (it shrank since it was opened): read it again against
    /// the new size, which now ends at or before it (a cut record, or the end).
    @inline(never)
    private func afterShrinking(at offset: Int) -> Next? {
        record(at: offset)
    }
}
