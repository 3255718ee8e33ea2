/// pcapng files built byte by byte for reader tests (draft-ietf-opsawg-pcapng): each section in the
/// byte order the test chooses, interfaces of any link type and timestamp resolution.
public struct PcapngBuilder {
    public private(set) var bytes: [UInt8] = []
    /// Where each block begins, in the order added (the error offsets tests expect).
    public private(set) var blockOffsets: [Int] = []
    private var bigEndian = false

    public init() {}

    private func u16(_ v: Int) -> [UInt8] {
        let b = [UInt8(v & 0xff), UInt8((v >> 8) & 0xff)]
        return bigEndian ? b.reversed() : b
    }

    private func u32(_ v: UInt32) -> [UInt8] {
        let b = [UInt8(v & 0xff), UInt8((v >> 8) & 0xff), UInt8((v >> 16) & 0xff), UInt8(v >> 24)]
        return bigEndian ? b.reversed() : b
    }

    private mutating func block(_ type: UInt32, _ body: [UInt8]) {
        let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
        blockOffsets.append(bytes.count)
        bytes += u32(type) + u32(UInt32(12 + padded.count)) + padded + u32(UInt32(12 + padded.count))
    }

    /// A Section Header Block: what follows is written in this byte order.
    public mutating func section(bigEndian: Bool) {
        self.bigEndian = bigEndian
        block(0x0a0d_0d0a, u32(0x1a2b_3c4d) + u16(1) + u16(0) + [UInt8](repeating: 0xff, count: 8))
    }

    /// An Interface Description Block: LINKTYPE value, snap length, `if_tsresol`, `if_tsoffset` (seconds).
    public mutating func interface(linkType: Int, snapLength: Int = 65_535, resolution: UInt8? = nil, offsetSeconds: Int64? = nil) {
        var options: [UInt8] = []
        if let resolution { options += u16(9) + u16(1) + [resolution, 0, 0, 0] }
        if let offsetSeconds {
            let v = UInt64(bitPattern: offsetSeconds)
            // A 64-bit option value in the section's byte order (unlike a packet's timestamp, high word first).
            let high = u32(UInt32(v >> 32)), low = u32(UInt32(v & 0xffff_ffff))
            options += u16(14) + u16(8) + (bigEndian ? high + low : low + high)
        }
        if !options.isEmpty { options += u16(0) + u16(0) }
        block(1, u16(linkType) + u16(0) + u32(UInt32(snapLength)) + options)
    }

    /// An Enhanced Packet Block; `wireLength` larger than the data makes a snap-cut record.
    public mutating func packet(interface: Int, ticks: UInt64, _ data: [UInt8], wireLength: Int? = nil) {
        block(6, u32(UInt32(interface)) + u32(UInt32(ticks >> 32)) + u32(UInt32(ticks & 0xffff_ffff))
            + u32(UInt32(data.count)) + u32(UInt32(wireLength ?? data.count)) + data)
    }

    /// A Simple Packet Block (interface 0, no timestamp).
    public mutating func simplePacket(_ data: [UInt8]) {
        block(3, u32(UInt32(data.count)) + data)
    }

    /// Raw bytes (a corrupt block).
    public mutating func append(_ raw: [UInt8]) {
        blockOffsets.append(bytes.count)
        bytes += raw
    }
}
