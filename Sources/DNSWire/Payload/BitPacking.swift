/// The RFC 4648 scheme generalised to 5, 6 or 7 bits per character: bytes are read as one
/// big-endian bit string, cut into groups MSB first, and the last group is padded with zero
/// bits. No '=' padding, since '=' cannot appear in a hostname label.
internal enum BitPacking {
    static func encode(_ bytes: [UInt8], bits: Int, alphabet: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { encode($0, bits: bits, alphabet: alphabet) }
    }

    static func encode(_ bytes: UnsafeRawBufferPointer, bits: Int, alphabet: [UInt8]) -> [UInt8] {
        guard !bytes.isEmpty else { return [] }
        return [UInt8](unsafeUninitializedCapacity: (bytes.count * 8 + bits - 1) / bits) { buffer, initialized in
            initialized = encode(bytes, bits: bits, alphabet: alphabet, into: UnsafeMutableRawPointer(buffer.baseAddress!))
        }
    }

    /// Writes the ceil(8n / bits) characters of `bytes` at `out`; returns how many.
    static func encode(_ bytes: UnsafeRawBufferPointer, bits: Int, alphabet: [UInt8], into out: UnsafeMutableRawPointer) -> Int {
        let mask = UInt32(1) << bits - 1
        var accumulator: UInt32 = 0
        var pending = 0
        var written = 0
        for byte in bytes {
            // pending < bits <= 7 before this, so the accumulator never needs more than 15 bits.
            accumulator = accumulator << 8 | UInt32(byte)
            pending += 8
            while pending >= bits {
                pending -= bits
                out.storeBytes(of: alphabet[Int((accumulator >> pending) & mask)], toByteOffset: written, as: UInt8.self)
                written += 1
            }
            accumulator &= (UInt32(1) << pending) - 1
        }
        if pending > 0 {
            out.storeBytes(of: alphabet[Int((accumulator << (bits - pending)) & mask)], toByteOffset: written, as: UInt8.self)
            written += 1
        }
        return written
    }

    static func decode(_ chars: [UInt8], bits: Int, table: [UInt8], name: StaticString) throws(DNSWireError) -> [UInt8] {
        let byteCount = (chars.count / 8) * bits + (chars.count % 8) * bits / 8
        var out: [UInt8] = []
        out.reserveCapacity(byteCount)
        var accumulator: UInt32 = 0
        var pending = 0
        for (index, char) in chars.enumerated() {
            let value = table[Int(char)]
            guard value != LabelEncoding.invalidDigit else {
                throw DNSWireError(.invalidEncoding, at: index, "byte \(char) at offset \(index) is not a \(name) character")
            }
            accumulator = accumulator << bits | UInt32(value)
            pending += bits
            if pending >= 8 {
                pending -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> pending))
                accumulator &= (UInt32(1) << pending) - 1
            }
        }
        // A whole character of padding means no byte count encodes to this length (e.g. one
        // base32 character); leftover bits that are not zero mean a non-canonical encoding.
        guard pending < bits else {
            throw DNSWireError(.invalidEncoding, at: max(chars.count - 1, 0), "\(chars.count) characters is not a possible \(name) length")
        }
        guard accumulator == 0 else {
            throw DNSWireError(.invalidEncoding, at: chars.count - 1, "\(name) text ends in nonzero padding bits")
        }
        return out
    }
}
