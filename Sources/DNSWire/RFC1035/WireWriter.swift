/// Appends wire-format fields to a byte array, with RFC 1035 4.1.4 name compression.
internal struct WireWriter {
    var out: [UInt8]
    /// Where the message starts in `out`; compression offsets count from here, so a caller can
    /// write after a prefix such as the 2-byte TCP length (RFC 1035 4.2.2).
    let base: Int
    let compress: Bool
    /// Suffixes already written, matched on exact bytes: case is preserved because tunnels
    /// carry data in letter case, so "Ab.example" must never point at "ab.example".
    private var suffixes = SuffixTable()

    /// Pointers hold 14 bits (RFC 1035 4.1.4), so only suffixes starting below this are targets.
    static let maxPointerTarget = 0x3FFF

    init(out: [UInt8], base: Int, compress: Bool) {
        self.out = out
        self.base = base
        self.compress = compress
    }

    @inline(__always)
    mutating func u8(_ value: UInt8) {
        out.append(value)
    }

    @inline(__always)
    mutating func u16(_ value: UInt16) {
        out.append(UInt8(truncatingIfNeeded: value >> 8))
        out.append(UInt8(truncatingIfNeeded: value))
    }

    @inline(__always)
    mutating func u32(_ value: UInt32) {
        out.append(UInt8(truncatingIfNeeded: value >> 24))
        out.append(UInt8(truncatingIfNeeded: value >> 16))
        out.append(UInt8(truncatingIfNeeded: value >> 8))
        out.append(UInt8(truncatingIfNeeded: value))
    }

    /// Writes `name`, replacing its longest already-written suffix by a pointer when
    /// `compressible`. Names that may not be compressed (SRV targets, RFC 2782; unknown types,
    /// RFC 3597 4) are also not offered as targets, so no reader has to follow a pointer into them.
    mutating func writeName(_ name: DNSName, compressible: Bool) {
        let storage = name.storage
        guard compress, compressible, !storage.isEmpty else {
            out.append(contentsOf: storage)
            out.append(0)
            return
        }
        storage.withUnsafeBufferPointer { name in
            // Label starts and suffix hashes on the stack: a name has at most 127 labels.
            withUnsafeTemporaryAllocation(of: SuffixTable.Key.self, capacity: 128) { keys in
                writeCompressed(name, keys: keys)
            }
        }
    }

    private mutating func writeCompressed(_ name: UnsafeBufferPointer<UInt8>, keys: UnsafeMutableBufferPointer<SuffixTable.Key>) {
        var count = 0
        var index = 0
        while index < name.count {
            keys[count] = SuffixTable.Key(start: index, length: name.count - index, hash: 0)
            count += 1
            index += Int(name[index]) + 1
        }
        // Each suffix hash extends the hash of the suffix after it.
        var hash = SuffixTable.Key.emptyHash
        var end = name.count
        for label in stride(from: count - 1, through: 0, by: -1) {
            let start = keys[label].start
            for position in start..<end {
                hash = (hash ^ UInt64(name[position])) &* 0x100_0000_01B3
            }
            keys[label].hash = hash
            end = start
        }
        for label in 0..<count {
            let key = keys[label]
            if let target = suffixes.find(key, name: name, in: out, base: base) {
                out.append(UInt8(truncatingIfNeeded: 0xC0 | target >> 8))
                out.append(UInt8(truncatingIfNeeded: target))
                return
            }
            let position = out.count - base
            if position <= WireWriter.maxPointerTarget {
                suffixes.insert(key, offset: UInt16(truncatingIfNeeded: position))
            }
            let end = label + 1 < count ? keys[label + 1].start : name.count
            out.append(contentsOf: UnsafeBufferPointer(rebasing: name[key.start..<end]))
        }
        out.append(0)
    }

    mutating func writeQuestion(_ question: DNSQuestion) {
        writeName(question.name, compressible: true)
        u16(question.type.rawValue)
        u16(question.dnsClass.rawValue)
    }

    mutating func writeRecord(_ record: DNSResourceRecord) throws(DNSWireError) {
        guard record.type != .opt else {
            throw DNSWireError(.valueOutOfRange, "OPT records belong in DNSMessage.edns, not in a section")
        }
        if let natural = record.rdata.naturalType, natural != record.type {
            throw DNSWireError(.valueOutOfRange, "\(natural) data in a record of type \(record.type)")
        }
        writeName(record.name, compressible: true)
        u16(record.type.rawValue)
        u16(record.rawClass)
        u32(record.ttl)
        try writeRData(record.rdata)
    }

    /// The OPT pseudo-record (RFC 6891 6.1.2): root owner, payload size in CLASS, flags in TTL.
    mutating func writeOPT(_ edns: EDNS) throws(DNSWireError) {
        u8(0)
        u16(DNSType.opt.rawValue)
        u16(edns.udpPayloadSize)
        u32(edns.ttl)
        try writeRData(.opt(edns.options))
    }

    /// RDLENGTH followed by RDATA; the length is patched in afterwards.
    private mutating func writeRData(_ rdata: DNSRData) throws(DNSWireError) {
        let lengthAt = out.count
        u16(0)
        switch rdata {
        case .a(let address):
            guard address.count == 4 else {
                throw DNSWireError(.rdataLengthMismatch, "A address has \(address.count) bytes, not 4")
            }
            out.append(contentsOf: address)
        case .aaaa(let address):
            guard address.count == 16 else {
                throw DNSWireError(.rdataLengthMismatch, "AAAA address has \(address.count) bytes, not 16")
            }
            out.append(contentsOf: address)
        case .ns(let name), .cname(let name), .ptr(let name):
            writeName(name, compressible: true)
        case .mx(let preference, let exchange):
            u16(preference)
            writeName(exchange, compressible: true)
        case .txt(let strings):
            for string in strings {
                guard string.count <= 255 else {
                    throw DNSWireError(.valueOutOfRange, "TXT string of \(string.count) bytes, more than 255 (RFC 1035 3.3.14)")
                }
                u8(UInt8(truncatingIfNeeded: string.count))
                out.append(contentsOf: string)
            }
        case .null(let data), .unknown(let data):
            out.append(contentsOf: data)
        case .srv(let priority, let weight, let port, let target):
            u16(priority)
            u16(weight)
            u16(port)
            writeName(target, compressible: false)
        case .soa(let mname, let rname, let serial, let refresh, let retry, let expire, let minimum):
            writeName(mname, compressible: true)
            writeName(rname, compressible: true)
            u32(serial)
            u32(refresh)
            u32(retry)
            u32(expire)
            u32(minimum)
        case .opt(let options):
            for option in options {
                guard option.data.count <= 0xFFFF else {
                    throw DNSWireError(.valueOutOfRange, "EDNS option \(option.code) has \(option.data.count) bytes, more than 65535")
                }
                u16(option.code)
                u16(UInt16(truncatingIfNeeded: option.data.count))
                out.append(contentsOf: option.data)
            }
        }
        let length = out.count - lengthAt - 2
        guard length <= 0xFFFF else {
            throw DNSWireError(.valueOutOfRange, "RDATA of \(length) bytes, more than 65535")
        }
        out[lengthAt] = UInt8(truncatingIfNeeded: length >> 8)
        out[lengthAt + 1] = UInt8(truncatingIfNeeded: length)
    }
}
