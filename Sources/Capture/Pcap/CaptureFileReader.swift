import CPcap
import Foundation

/// Reads a capture file: classic pcap (micro- and nanosecond, either byte order) through libpcap, every
/// timestamp in nanoseconds (`pcap_open_offline_with_tstamp_precision`); pcapng with `PcapngReader`
/// (each section in its own byte order, each interface with its own link type, `if_tsresol` and
/// `if_tsoffset`). An optional BPF filter is compiled by libpcap (per link type for pcapng).
///
/// Errors are typed: an empty file, a file that is not a capture, a cut or corrupt record, a timestamp
/// that Int64 nanoseconds cannot hold (with the byte offset where reading stopped, after every earlier
/// record has been delivered).
public final class CaptureFileReader {
    public let path: String
    /// The link type of the file (of its first interface for pcapng; `linkTypes` has them all).
    public let linkType: LinkType
    /// The snap length the file declares.
    public let snapLength: Int
    /// "pcap" or "pcapng", from the file's magic number.
    public let format: String
    /// Records read so far (after the filter).
    public private(set) var records = 0
    private var handle: OpaquePointer?
    private var pcapng: PcapngReader?
    /// A classic pcap's records read in blocks, when libpcap's loop can be taken over (PcapRecordBlocks).
    private var blocks: PcapRecordBlocks?
    /// The stdio buffer of a classic pcap's stream (freed after `pcap_close` closed the stream).
    private var streamBuffer: UnsafeMutablePointer<CChar>?
    /// 256 KiB: 760 reads for a 200 MB capture; small enough to stay in the processor's cache.
    static let readBuffer = 1 << 18

    /// Every link type seen so far (pcapng interfaces can differ; after reading, all of the file's).
    public var linkTypes: [LinkType] { pcapng.map { $0.linkTypes.isEmpty ? [linkType] : $0.linkTypes } ?? [linkType] }

    /// The link types for a summary: "ETHERNET", or "ETHERNET+RAW" for a mixed pcapng.
    public var linkTypeDescription: String { linkTypes.map(\.description).joined(separator: "+") }

    public convenience init(path: String, filter: String? = nil) throws(CaptureError) {
        try self.init(path: path, filter: filter, blockRecords: true)
    }

    /// `blockRecords: false` reads every record through libpcap (the reference the block reader is
    /// tested against); `blockSize` is the block reader's (tests cross block edges with small ones).
    init(path: String, filter: String?, blockRecords: Bool, blockSize: Int = PcapRecordBlocks.defaultBlockSize) throws(CaptureError) {
        self.path = path
        let magic: UInt32
        switch Self.peekMagic(path) {
        case .failure(let error): throw error
        case .success(let m): magic = m
        }
        switch magic {
        case 0xa1b2_c3d4, 0xd4c3_b2a1, 0xa1b2_3c4d, 0x4d3c_b2a1, 0xa1b2_cd34, 0x34cd_b2a1: format = "pcap"
        case 0x0a0d_0d0a: format = "pcapng"
        default:
            throw CaptureError(.notACapture, String(format: "not a pcap or pcapng file (starts with 0x%08x)", magic),
                               source: path, offset: 0)
        }
        if format == "pcapng" {
            let reader = try PcapngReader(path: path, filter: filter)
            pcapng = reader
            linkType = reader.firstLinkType
            snapLength = reader.firstSnapLength
            return
        }
        var errbuf = [CChar](repeating: 0, count: Int(CPcap_ERRBUF_SIZE))
        // libpcap reads the file through stdio, whose buffer is a page: one read(2) per 4 KiB, 48,000 for
        // a 200 MB capture. The file is opened here with a buffer of `readBuffer` bytes instead (set
        // before the first read, as setvbuf requires); libpcap reads and checks every record as before.
        guard let file = fopen(path, "rb") else {
            throw CaptureError(.cannotOpen, "cannot open (\(String(cString: strerror(errno))))", source: path)
        }
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: Self.readBuffer)
        setvbuf(file, buffer, _IOFBF, Self.readBuffer)
        guard let p = pcap_fopen_offline_with_tstamp_precision(file, CPcap_TSTAMP_PRECISION_NANO, &errbuf) else {
            fclose(file)  // libpcap closes it only when it opened
            buffer.deallocate()
            throw CaptureError(.corrupt, CaptureError.text(errbuf), source: path, offset: 0)
        }
        streamBuffer = buffer
        handle = p
        linkType = LinkType(dlt: pcap_datalink(p))
        snapLength = Int(pcap_snapshot(p))
        if let filter, !filter.isEmpty {
            var program = bpf_program()
            guard pcap_compile(p, &program, filter, 1, CPcap_NETMASK_UNKNOWN) == 0 else {
                let message = String(cString: pcap_geterr(p))
                pcap_close(p)
                handle = nil
                streamBuffer?.deallocate()
                streamBuffer = nil
                throw CaptureError(.badFilter, "filter \"\(filter)\": \(message)", source: path)
            }
            defer { pcap_freecode(&program) }
            guard pcap_setfilter(p, &program) == 0 else {
                let message = String(cString: pcap_geterr(p))
                pcap_close(p)
                handle = nil
                streamBuffer?.deallocate()
                streamBuffer = nil
                throw CaptureError(.badFilter, "filter \"\(filter)\": \(message)", source: path)
            }
        }
        if blockRecords {
            blocks = PcapRecordBlocks(path: path, handle: p, magic: magic, filtered: filter?.isEmpty == false, blockSize: blockSize)
        }
    }

    deinit {
        if let handle { pcap_close(handle) }
        streamBuffer?.deallocate()
    }

    /// Hands every record to `body` (frame bytes valid during the call, wire length, time in ns since
    /// the epoch), ignoring link types: for callers that wrote the file themselves with one.
    public func forEachFrame(
        stop: () -> Bool = { false }, _ body: (UnsafeRawBufferPointer, Int, Int64) -> Void
    ) throws(CaptureError) {
        try forEachFrame(stop: stop) { frame, wire, time, _ in body(frame, wire, time) }
    }

    /// Hands every record to `body` (frame bytes valid during the call, wire length, time in ns since
    /// the epoch, the link type of its interface). Returns at the end of the file, or early when `stop`
    /// says so (asked every 4096 records); throws `.corrupt` with the offset where reading stopped when
    /// a record is cut or invalid, after delivering every record before it.
    public func forEachFrame(
        stop: () -> Bool = { false }, _ body: (UnsafeRawBufferPointer, Int, Int64, LinkType) -> Void
    ) throws(CaptureError) {
        if let pcapng {
            try pcapng.forEachFrame({
                records += 1
                return records & 4095 != 0 || !stop()
            }, body)
            return
        }
        if let blocks {
            try forEachBlockFrame(blocks, stop: stop, body)
            return
        }
        guard let p = handle else { return }
        let linkType = self.linkType
        var header: UnsafeMutablePointer<pcap_pkthdr>?
        var data: UnsafePointer<UInt8>?
        // A classic pcap's records are laid end to end after the 24-byte file header: track where the
        // next one starts so an error can name it. pcapng blocks vary, so there ftell tells.
        var offset = 24
        while true {
            let status = pcap_next_ex(p, &header, &data)
            if status == 1, let header, let data {
                let h = header.pointee
                records += 1
                if records & 4095 == 0, stop() { return }
                let start = offset
                offset += 16 + Int(h.caplen)
                // A classic pcap's 32-bit seconds always fit; the check keeps a trap out of any other source.
                let (whole, overflow) = Int64(h.ts.tv_sec).multipliedReportingOverflow(by: 1_000_000_000)
                let (time, overflow2) = whole.addingReportingOverflow(Int64(h.ts.tv_usec))
                guard !overflow, !overflow2, time >= 0 else {
                    throw CaptureError(.timestampOutOfRange, "timestamp out of range (\(h.ts.tv_sec) s): not between 1970 and 2262-04-11",
                                       source: path, offset: start)
                }
                body(UnsafeRawBufferPointer(start: data, count: Int(h.caplen)), Int(h.len), time, linkType)
            } else if status == -2 {
                return
            } else {
                let message = String(cString: pcap_geterr(p))
                let stoppedAt = format == "pcap" ? offset : (pcap_file(p).map { Int(ftell($0)) } ?? 0)
                throw CaptureError(.corrupt, message.isEmpty ? "read error" : message, source: path, offset: stoppedAt)
            }
        }
    }

    /// The loop below over blocks of the file: the same records, times, checks and errors as libpcap's.
    private func forEachBlockFrame(
        _ file: PcapRecordBlocks, stop: () -> Bool, _ body: (UnsafeRawBufferPointer, Int, Int64, LinkType) -> Void
    ) throws(CaptureError) {
        let linkType = self.linkType
        // `offset` is where the loop below reports a record to start: 16 + the captured length after
        // the one before, as the libpcap loop counts (a record cut to the snap length takes more of
        // the file: `position` is where the next one really starts).
        var offset = 24
        var position = 24
        while let next = file.record(at: position) {
            let r: PcapRecordBlocks.Record
            switch next {
            case .record(let record): r = record
            case .failure(let message): throw CaptureError(.corrupt, message, source: path, offset: offset)
            }
            records += 1
            if records & 4095 == 0, stop() { return }
            let start = offset
            offset += 16 + r.captured
            position += 16 + r.stored
            let (whole, overflow) = r.seconds.multipliedReportingOverflow(by: 1_000_000_000)
            let (time, overflow2) = whole.addingReportingOverflow(r.fraction)
            guard !overflow, !overflow2, time >= 0 else {
                throw CaptureError(.timestampOutOfRange, "timestamp out of range (\(r.seconds) s): not between 1970 and 2262-04-11",
                                   source: path, offset: start)
            }
            body(UnsafeRawBufferPointer(start: r.data, count: r.captured), r.wire, time, linkType)
        }
    }

    private static func peekMagic(_ path: String) -> Result<UInt32, CaptureError> {
        guard let file = fopen(path, "rb") else {
            return .failure(CaptureError(.cannotOpen, "cannot open (\(String(cString: strerror(errno))))", source: path))
        }
        defer { fclose(file) }
        var bytes = [UInt8](repeating: 0, count: 4)
        let n = fread(&bytes, 1, 4, file)
        if n == 0 {
            if ferror(file) != 0 {
                return .failure(CaptureError(.cannotOpen, "cannot read (\(String(cString: strerror(errno))))", source: path))
            }
            return .failure(CaptureError(.emptyFile, "empty file", source: path, offset: 0))
        }
        guard n == 4 else {
            return .failure(CaptureError(.notACapture, "not a pcap or pcapng file (\(n) bytes)", source: path, offset: 0))
        }
        return .success(UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3]))
    }
}
