import CPcap

/// Writes a classic pcap file through libpcap (`pcap_open_dead_with_tstamp_precision` + `pcap_dump_open`):
/// used by tests and the benchmark generator to make captures of any link type.
public final class PcapWriter {
    public let path: String
    private var pcap: OpaquePointer?
    private var dumper: OpaquePointer?
    private let nanosecond: Bool

    /// `nanosecond` picks the file's timestamp resolution (magic 0xa1b23c4d instead of 0xa1b2c3d4).
    public init(path: String, linkType: LinkType, snapLength: Int = 65_535, nanosecond: Bool = true) throws(CaptureError) {
        self.path = path
        self.nanosecond = nanosecond
        let precision = nanosecond ? CPcap_TSTAMP_PRECISION_NANO : CPcap_TSTAMP_PRECISION_MICRO
        guard let p = pcap_open_dead_with_tstamp_precision(linkType.dlt, Int32(clamping: snapLength), precision) else {
            throw CaptureError(.writeFailed, "pcap_open_dead failed for \(linkType)", source: path)
        }
        guard let d = pcap_dump_open(p, path) else {
            let message = String(cString: pcap_geterr(p))
            pcap_close(p)
            throw CaptureError(.writeFailed, message, source: path)
        }
        pcap = p
        dumper = d
    }

    deinit { close() }

    /// Appends one frame. `wireLength` defaults to the frame's length (nothing cut).
    public func write(_ frame: [UInt8], timestampNanos: Int64, wireLength: Int? = nil) {
        guard let dumper else { return }
        var header = pcap_pkthdr()
        header.ts.tv_sec = Int(timestampNanos / 1_000_000_000)
        let fraction = Int(timestampNanos % 1_000_000_000)
        header.ts.tv_usec = nanosecond ? fraction : fraction / 1_000
        header.caplen = UInt32(clamping: frame.count)
        header.len = UInt32(clamping: wireLength ?? frame.count)
        frame.withUnsafeBufferPointer { bytes in
            pcap_dump(UnsafeMutablePointer<UInt8>(dumper), &header, bytes.baseAddress)
        }
    }

    /// Flushes and closes the file. Safe to call twice.
    public func close() {
        if let dumper { pcap_dump_close(dumper) }
        if let pcap { pcap_close(pcap) }
        dumper = nil
        pcap = nil
    }
}
