import CPcap
import Foundation
import OSLayer

/// Reads pcapng (draft-ietf-opsawg-pcapng) itself instead of through libpcap, which reads every
/// section in the first one's byte order and refuses interfaces of different link types. Here each
/// section has its own byte order (its Section Header Block's magic) and its own interfaces, and each
/// interface its own link type, `if_tsresol` and `if_tsoffset`.
///
/// The file is mapped, never copied; every read is bounds-checked against the block it belongs to,
/// and every block is checked against the file before it is read. A block that does not fit is an
/// error naming its byte offset, after every record before it has been delivered. A file truncated
/// while it is read reads as zeros past its new end (the mapping's guard, OSLayer's FileMapping),
/// which no block parses: the error then says the file changed.
final class PcapngReader {
    struct Interface {
        var linkType: LinkType
        var linkTypeValue: Int32
        var snapLength: Int
        /// `if_tsresol` (section 4.2): bit 7 clear = 10^-n seconds per tick, set = 2^-n.
        var resolution: UInt8 = 6
        /// `if_tsoffset` in seconds, added to every timestamp.
        var offsetSeconds: Int64 = 0
        /// The BPF program compiled for this interface's link type, when a filter is given.
        var filter: UnsafeMutablePointer<bpf_program>?
    }

    let path: String
    private let mapping: FileMapping
    private let base: UnsafeRawPointer
    private let size: Int
    private var offset = 0
    private var bigEndian = false
    private var interfaces: [Interface] = []
    private let filter: String?
    /// Every program compiled, freed at the end (interfaces of earlier sections keep none).
    private var programs: [UnsafeMutablePointer<bpf_program>] = []
    /// The last record's time, given to Simple Packet Blocks, which carry none.
    private var lastTime: Int64 = 0
    /// The reason a read stops when the file lost pages it had mapped (truncated while it was read, or
    /// unreadable): the mapping's guard put zeros there (FileMapping) instead of SIGBUS ending the process.
    static let changedWhileRead = "the file shrank or could not be read while it was being read"
    /// At most this many interfaces in a section (the format allows 2^32; each costs a little memory).
    static let maxInterfaces = 65_536

    /// The first interface's link type and snap length (what a one-interface file has).
    private(set) var firstLinkType: LinkType = .other(-1)
    private(set) var firstSnapLength = 0
    /// Every link type of the interfaces met so far, first-seen order.
    private(set) var linkTypes: [LinkType] = []
    /// True while `init` looks at the first section (a filter error then names no offset).
    private var opening = true

    init(path: String, filter: String?) throws(CaptureError) {
        self.path = path
        self.filter = filter?.isEmpty == false ? filter : nil
        let file: ReadOnlyFile
        do {
            file = try ReadOnlyFile(path: path)
        } catch {
            switch error {
            case .open(let code): throw CaptureError(.cannotOpen, "cannot open (\(code))", source: path)
            case .status(let code): throw CaptureError(.cannotOpen, "cannot read (\(code))", source: path)
            case .notRegular: throw CaptureError(.cannotOpen, "cannot read (not a regular file)", source: path)
            }
        }
        guard file.size > 0 else { throw CaptureError(.cannotOpen, "cannot read (empty file)", source: path) }
        do {
            mapping = try file.mapWhole()
        } catch {
            throw CaptureError(.cannotOpen, "cannot map (\(error))", source: path)
        }
        base = mapping.bytes.baseAddress!
        size = mapping.bytes.count
        // The first section header must be whole (as libpcap's open does); its first interface, if
        // any, gives the file's link type. Nothing is delivered yet.
        // A filter that does not compile for the first link type is refused here, as libpcap does.
        try scan(stopAtFirstInterface: true) { _, _, _, _ in true }
        offset = 0
        bigEndian = false
        interfaces = []
        linkTypes = []
        opening = false
    }

    deinit {
        for program in programs {
            pcap_freecode(program)
            program.deallocate()
        }
    }

    /// Delivers every record (frame, wire length, nanoseconds since the epoch, link type) in file order.
    /// `count` is told of each record first and may end the reading by returning false.
    func forEachFrame(
        _ count: () -> Bool, _ body: (UnsafeRawBufferPointer, Int, Int64, LinkType) -> Void
    ) throws(CaptureError) {
        try scan(stopAtFirstInterface: false) { frame, wire, time, interface in
            guard count() else { return false }
            body(frame, wire, time, interface)
            return true
        }
    }

    // MARK: - Blocks

    @inline(__always) private func u16(_ at: Int) -> UInt16 {
        let v = base.loadUnaligned(fromByteOffset: at, as: UInt16.self)
        return bigEndian ? UInt16(bigEndian: v) : UInt16(littleEndian: v)
    }

    @inline(__always) private func u32(_ at: Int) -> UInt32 {
        let v = base.loadUnaligned(fromByteOffset: at, as: UInt32.self)
        return bigEndian ? UInt32(bigEndian: v) : UInt32(littleEndian: v)
    }

    /// A block that does not parse; or, when the mapping read zeros where the file no longer had its
    /// bytes, the file that changed under the reader (FileMapping).
    private func corrupt(_ reason: String, at: Int) -> CaptureError {
        if mapping.damaged { return CaptureError(.corrupt, Self.changedWhileRead, source: path, offset: at) }
        return CaptureError(.corrupt, reason, source: path, offset: at)
    }

    /// Walks the blocks from `offset`. `deliver` returns false to stop early.
    private func scan(
        stopAtFirstInterface: Bool, _ deliver: (UnsafeRawBufferPointer, Int, Int64, LinkType) -> Bool
    ) throws(CaptureError) {
        while offset < size {
            let start = offset
            guard size - start >= 12 else {
                throw corrupt("block header cut (\(size - start) bytes left, a block has at least 12)", at: start)
            }
            let type = u32(start)
            if type == 0x0a0d_0d0a {
                // Section Header Block: its byte-order magic says how this section is written (section 4.1).
                switch base.loadUnaligned(fromByteOffset: start + 8, as: UInt32.self) {
                case 0x1a2b_3c4d: bigEndian = false
                case 0x4d3c_2b1a: bigEndian = true
                case let magic:
                    throw corrupt(String(format: "section header with an unknown byte-order magic 0x%08x", UInt32(bigEndian: magic)), at: start)
                }
                interfaces = []
            } else if start == 0 {
                throw corrupt("pcapng file does not start with a section header", at: 0)
            }
            let length = Int(u32(start + 4))
            guard length >= 12, length % 4 == 0 else {
                throw corrupt(String(format: "block of type 0x%x has an invalid length %d", type, length), at: start)
            }
            guard length <= size - start else {
                throw corrupt(String(format: "block of type 0x%x is %d bytes, the file has %d left", type, length, size - start), at: start)
            }
            guard Int(u32(start + length - 4)) == length else {
                throw corrupt(String(format: "block of type 0x%x: leading length %d, trailing length %d", type, length,
                                     Int(u32(start + length - 4))), at: start)
            }
            let body = start + 8, bodyLength = length - 12
            offset = start + length
            switch type {
            case 0x0a0d_0d0a:
                guard bodyLength >= 16 else { throw corrupt("section header cut (\(bodyLength) bytes of body)", at: start) }
                let major = u16(body + 4)
                guard major == 1 else { throw corrupt("unsupported pcapng version \(major).\(u16(body + 6))", at: start) }
            case 1:
                try interface(body: body, bodyLength: bodyLength, at: start)
                if stopAtFirstInterface { return }
            case 6, 2:
                // Enhanced Packet Block (section 4.3); the obsolete Packet Block has a 16-bit interface id
                // and a 16-bit drop count where the EPB has its 32-bit interface id.
                guard bodyLength >= 20 else { throw corrupt("packet block cut (\(bodyLength) bytes of body)", at: start) }
                let id = type == 6 ? Int(u32(body)) : Int(u16(body))
                let captured = Int(u32(body + 12)), wire = Int(u32(body + 16))
                guard captured <= bodyLength - 20 else {
                    throw corrupt("packet block captures \(captured) bytes, the block holds \(bodyLength - 20)", at: start)
                }
                let ticks = UInt64(u32(body + 4)) << 32 | UInt64(u32(body + 8))
                guard id < interfaces.count else {
                    throw corrupt("packet for interface \(id), the section describes \(interfaces.count)", at: start)
                }
                let time = try nanoseconds(ticks, interfaces[id], at: start)
                guard try record(body + 20, captured, max(wire, captured), time, id, deliver) else { return }
            case 3:
                // Simple Packet Block (section 4.4): interface 0, no timestamp, the snap length bounds it.
                guard bodyLength >= 4 else { throw corrupt("simple packet block cut", at: start) }
                guard !interfaces.isEmpty else { throw corrupt("simple packet block before any interface", at: start) }
                let wire = Int(u32(body))
                let snap = interfaces[0].snapLength > 0 ? interfaces[0].snapLength : Int.max
                let captured = min(wire, bodyLength - 4, snap)
                guard try record(body + 4, captured, max(wire, captured), lastTime, 0, deliver) else { return }
            default:
                continue  // name resolution, statistics, decryption secrets, custom blocks: nothing to measure
            }
        }
        if mapping.damaged { throw CaptureError(.corrupt, Self.changedWhileRead, source: path, offset: size) }
    }

    private func record(
        _ at: Int, _ captured: Int, _ wire: Int, _ time: Int64, _ id: Int,
        _ deliver: (UnsafeRawBufferPointer, Int, Int64, LinkType) -> Bool
    ) throws(CaptureError) -> Bool {
        let frame = UnsafeRawBufferPointer(start: base + at, count: captured)
        lastTime = time
        if let program = interfaces[id].filter {
            var header = pcap_pkthdr()
            header.caplen = bpf_u_int32(captured)
            header.len = bpf_u_int32(truncatingIfNeeded: wire)
            let accepted = frame.withMemoryRebound(to: UInt8.self) {
                pcap_offline_filter(program, &header, $0.baseAddress ?? UnsafePointer(bitPattern: 1)!)
            }
            if accepted == 0 { return true }
        }
        return deliver(frame, wire, time, interfaces[id].linkType)
    }

    /// Interface Description Block (section 4.2): link type, snap length, then options.
    private func interface(body: Int, bodyLength: Int, at start: Int) throws(CaptureError) {
        guard bodyLength >= 8 else { throw corrupt("interface description cut (\(bodyLength) bytes of body)", at: start) }
        guard interfaces.count < Self.maxInterfaces else {
            throw corrupt("more than \(Self.maxInterfaces) interfaces in one section", at: start)
        }
        let value = Int32(u16(body))
        var entry = Interface(linkType: LinkType(dlt: value), linkTypeValue: value, snapLength: Int(u32(body + 4)))
        var cursor = body + 8
        let end = body + bodyLength
        // Options: code, length, value padded to 4 bytes; opt_endofopt (0) ends them.
        while end - cursor >= 4 {
            let code = u16(cursor), optionLength = Int(u16(cursor + 2))
            let padded = (optionLength + 3) & ~3
            guard padded <= end - cursor - 4 else { throw corrupt("interface option \(code) runs past its block", at: start) }
            if code == 0 { break }
            if code == 9, optionLength >= 1 { entry.resolution = base.load(fromByteOffset: cursor + 4, as: UInt8.self) }
            if code == 14, optionLength >= 8 {
                let high = UInt64(u32(cursor + 4)), low = UInt64(u32(cursor + 8))
                entry.offsetSeconds = Int64(bitPattern: bigEndian ? high << 32 | low : low << 32 | high)
            }
            cursor += 4 + padded
        }
        if let filter { try compile(filter, for: &entry, at: start) }
        if linkTypes.isEmpty {
            firstLinkType = entry.linkType
            firstSnapLength = entry.snapLength
        }
        if !linkTypes.contains(entry.linkType) { linkTypes.append(entry.linkType) }
        interfaces.append(entry)
    }

    private func compile(_ filter: String, for entry: inout Interface, at start: Int) throws(CaptureError) {
        guard let dead = pcap_open_dead_with_tstamp_precision(entry.linkType.dlt, Int32(clamping: max(entry.snapLength, 65_535)),
                                                              CPcap_TSTAMP_PRECISION_NANO) else {
            throw CaptureError(.badFilter, "filter \"\(filter)\": libpcap has no handle for \(entry.linkType)", source: path, offset: start)
        }
        defer { pcap_close(dead) }
        let program = UnsafeMutablePointer<bpf_program>.allocate(capacity: 1)
        program.initialize(to: bpf_program())
        guard pcap_compile(dead, program, filter, 1, CPcap_NETMASK_UNKNOWN) == 0 else {
            let message = String(cString: pcap_geterr(dead))
            program.deallocate()
            throw CaptureError(.badFilter, "filter \"\(filter)\" on \(entry.linkType): \(message)", source: path,
                               offset: opening ? nil : start)
        }
        programs.append(program)
        entry.filter = program
    }

    /// Ticks of the interface's resolution to nanoseconds since the epoch, plus `if_tsoffset`. A time
    /// that Int64 nanoseconds cannot hold (before 1970 or after 2262-04-11) is a corrupt record.
    private func nanoseconds(_ ticks: UInt64, _ interface: Interface, at start: Int) throws(CaptureError) -> Int64 {
        let r = interface.resolution
        let exponent = Int(r & 0x7f)
        var ns: UInt64?
        if r & 0x80 == 0 {
            if exponent <= 9 {
                var scale: UInt64 = 1
                for _ in 0..<(9 - exponent) { scale *= 10 }
                let (product, overflow) = ticks.multipliedReportingOverflow(by: scale)
                ns = overflow ? nil : product
            } else {
                var divisor: UInt64 = 1
                for _ in 0..<min(exponent - 9, 19) { divisor *= 10 }
                ns = exponent - 9 > 19 ? 0 : ticks / divisor
            }
        } else {
            // 2^-exponent seconds per tick: whole seconds, then the fraction in 128 bits.
            let seconds = exponent >= 64 ? 0 : ticks >> UInt64(exponent)
            let fraction = exponent >= 64 ? ticks : ticks & ((1 << UInt64(exponent)) &- 1)
            let wide = fraction.multipliedFullWidth(by: 1_000_000_000)
            let fractionNanos = exponent >= 64
                ? wide.high >> UInt64(exponent - 64)
                : (exponent == 0 ? 0 : wide.high << UInt64(64 - exponent) | wide.low >> UInt64(exponent))
            let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
            ns = overflow ? nil : whole.addingReportingOverflow(fractionNanos).overflow ? nil : whole + fractionNanos
        }
        var result: Int64?
        if let ns, let signed = Int64(exactly: ns) {
            let (shift, overflow) = interface.offsetSeconds.multipliedReportingOverflow(by: 1_000_000_000)
            let (sum, overflow2) = signed.addingReportingOverflow(shift)
            if !overflow, !overflow2, sum >= 0 { result = sum }
        }
        guard let result else {
            let unit = r & 0x80 == 0 ? "10^-\(exponent)" : "2^-\(exponent)"
            throw CaptureError(.timestampOutOfRange, "timestamp out of range: \(ticks) ticks of \(unit) s "
                          + "+ \(interface.offsetSeconds) s is not between 1970 and 2262-04-11 (Int64 nanoseconds)", source: path, offset: start)
        }
        return result
    }
}
