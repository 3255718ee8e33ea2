/// Bounded big-endian reads over a message, with RFC 1035 4.1.4 name decompression.
///
/// Every read checks `limit` first, so no subscript can go out of range whatever the input.
/// While RDATA is being decoded `limit` is the end of that RDATA, and running into it is
/// reported as `.rdataLengthMismatch` rather than `.truncated`.
internal struct WireReader {
    let bytes: UnsafeRawBufferPointer
    var offset: Int = 0
    var limit: Int
    var overrunCode: DNSWireError.Code = .truncated

    /// Pointer hops allowed in one name. Segment starts strictly decrease (see `readName`), so
    /// this only cuts short long chains of pointers to pointers, which no encoder produces.
    static let maxPointerJumps = 128

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        self.limit = bytes.count
    }

    @inline(__always)
    func need(_ count: Int, _ what: StaticString) throws(DNSWireError) {
        guard count <= limit - offset else {
            throw overrun(at: offset, what)
        }
    }

    func overrun(at position: Int, _ what: StaticString) -> DNSWireError {
        if overrunCode == .truncated {
            return DNSWireError(.truncated, at: position, "message ends inside the \(what) at offset \(position)")
        }
        return DNSWireError(overrunCode, at: position, "\(what) at offset \(position) runs past the end of its RDATA")
    }

    @inline(__always)
    mutating func readU8(_ what: StaticString) throws(DNSWireError) -> UInt8 {
        try need(1, what)
        let value = bytes[offset]
        offset += 1
        return value
    }

    @inline(__always)
    mutating func readU16(_ what: StaticString) throws(DNSWireError) -> UInt16 {
        try need(2, what)
        let value = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
        offset += 2
        return value
    }

    @inline(__always)
    mutating func readU32(_ what: StaticString) throws(DNSWireError) -> UInt32 {
        try need(4, what)
        var value = UInt32(bytes[offset]) << 24
        value |= UInt32(bytes[offset + 1]) << 16
        value |= UInt32(bytes[offset + 2]) << 8
        value |= UInt32(bytes[offset + 3])
        offset += 4
        return value
    }

    mutating func readBytes(_ count: Int, _ what: StaticString) throws(DNSWireError) -> [UInt8] {
        try need(count, what)
        let result = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
        offset += count
        return result
    }

    /// Reads a possibly compressed name (RFC 1035 4.1.4).
    ///
    /// Rules beyond the RFC, so that hostile input always ends quickly with a precise error:
    /// a pointer must target an offset strictly before the start of the segment it ends (the
    /// name's own start, or the previous pointer's target), so forward and self pointers and
    /// every cycle are `.pointerLoop`; a target past the message is `.pointerOutOfBounds`;
    /// label types 01 and 10 are `.badLabelType` (the RFC 6891 5 extended types are retired);
    /// more than 255 octets decompressed is `.nameTooLong`.
    ///
    /// Two passes: the first validates and measures, the second copies into a single exactly
    /// sized array, so a name costs one allocation.
    mutating func readName() throws(DNSWireError) -> DNSName {
        let start = offset
        var position = offset
        var segmentStart = offset
        var bound = limit
        var code = overrunCode
        var resumeAt = -1
        var storageLength = 0
        var jumps = 0
        scan: while true {
            guard position < bound else {
                throw nameOverrun(code, at: position)
            }
            let length = bytes[position]
            switch length & 0xC0 {
            case 0x00:
                if length == 0 {
                    if resumeAt < 0 { resumeAt = position + 1 }
                    break scan
                }
                let labelLength = Int(length)
                guard labelLength < bound - position else {
                    throw nameOverrun(code, at: position)
                }
                storageLength += labelLength + 1
                guard storageLength + 1 <= DNSName.maxWireLength else {
                    throw DNSWireError(.nameTooLong, at: position, "name reaches \(storageLength + 1) octets at offset \(position), more than 255")
                }
                position += labelLength + 1
            case 0xC0:
                guard 2 <= bound - position else {
                    throw nameOverrun(code, at: position)
                }
                let target = Int(length & 0x3F) << 8 | Int(bytes[position + 1])
                guard target < bytes.count else {
                    throw DNSWireError(.pointerOutOfBounds, at: position, "name pointer at offset \(position) targets \(target), past the \(bytes.count)-byte message")
                }
                guard target < segmentStart else {
                    throw DNSWireError(.pointerLoop, at: position, "name pointer at offset \(position) targets \(target), not before \(segmentStart), so it loops")
                }
                jumps += 1
                guard jumps <= WireReader.maxPointerJumps else {
                    throw DNSWireError(.pointerLoop, at: position, "name follows more than \(WireReader.maxPointerJumps) pointers")
                }
                if resumeAt < 0 { resumeAt = position + 2 }
                // After the first jump the name lives elsewhere in the message; only the
                // message end bounds it, whatever RDATA we started in.
                bound = bytes.count
                code = .truncated
                position = target
                segmentStart = target
            default:
                throw DNSWireError(.badLabelType, at: position, "label type 0x\(String(length & 0xC0, radix: 16)) at offset \(position) is not defined")
            }
        }
        offset = resumeAt
        if storageLength == 0 { return .root }
        let bytes = self.bytes
        let storage = [UInt8](unsafeUninitializedCapacity: storageLength) { buffer, initialized in
            let destination = UnsafeMutableRawBufferPointer(buffer)
            var position = start
            var written = 0
            while written < storageLength {
                let length = Int(bytes[position])
                if length & 0xC0 == 0xC0 {
                    position = (length & 0x3F) << 8 | Int(bytes[position + 1])
                    continue
                }
                UnsafeMutableRawBufferPointer(rebasing: destination[written..<(written + length + 1)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[position..<(position + length + 1)]))
                written += length + 1
                position += length + 1
            }
            initialized = written
        }
        return DNSName(uncheckedStorage: storage)
    }

    private func nameOverrun(_ code: DNSWireError.Code, at position: Int) -> DNSWireError {
        if code == .truncated {
            return DNSWireError(.truncated, at: position, "message ends inside the name at offset \(position)")
        }
        return DNSWireError(code, at: position, "name at offset \(position) runs past the end of its RDATA")
    }
}
