/// Positional base 36 over big integers, the upload encoding of MasterDnsVPN.
///
/// Unlike the bit-packed encodings its length depends on the value, so the capacity functions
/// work from powers of 36 with exact integer arithmetic: off-by-one errors here would make a
/// tunnel emit a name one character too long.
internal enum Base36 {
    /// 36^6, the largest power of 36 below 2^32, so each division step of a 32-bit limb fits in 64 bits.
    private static let chunkDivisor: UInt64 = 2_176_782_336
    private static let chunkDigits = 6

    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var zeros = 0
        while zeros < bytes.count, bytes[zeros] == 0 { zeros += 1 }
        var out = [UInt8](repeating: UInt8(ascii: "0"), count: zeros)
        let significant = bytes.count - zeros
        guard significant > 0 else { return out }

        // Big-endian 32-bit limbs of the integer after the leading zero bytes.
        var limbs = [UInt32](repeating: 0, count: (significant + 3) / 4)
        for position in 0..<significant {
            let fromEnd = significant - 1 - position
            limbs[limbs.count - 1 - fromEnd / 4] |= UInt32(bytes[zeros + position]) << ((fromEnd % 4) * 8)
        }

        let alphabet = LabelEncoding.base36Alphabet
        var reversed: [UInt8] = []
        reversed.reserveCapacity(encodedLength(forBytes: significant))
        var first = 0
        while first < limbs.count {
            // Divide the whole number by 36^6; the remainder is the next six digits.
            var remainder: UInt64 = 0
            for index in first..<limbs.count {
                let current = remainder << 32 | UInt64(limbs[index])
                limbs[index] = UInt32(truncatingIfNeeded: current / chunkDivisor)
                remainder = current % chunkDivisor
            }
            while first < limbs.count, limbs[first] == 0 { first += 1 }
            let isTopChunk = first == limbs.count
            for _ in 0..<chunkDigits {
                // The top chunk stops at its most significant non-zero digit.
                if isTopChunk, remainder == 0 { break }
                reversed.append(alphabet[Int(remainder % 36)])
                remainder /= 36
            }
        }
        out.append(contentsOf: reversed.reversed())
        return out
    }

    static func decode(_ chars: [UInt8]) throws(DNSWireError) -> [UInt8] {
        let table = LabelEncoding.base36Table
        var zeros = 0
        while zeros < chars.count, chars[zeros] == UInt8(ascii: "0") { zeros += 1 }

        // Little-endian 32-bit limbs; each step multiplies by 36^k and adds k digits.
        var limbs: [UInt32] = []
        limbs.reserveCapacity((chars.count - zeros) * 6 / 32 + 2)
        var index = zeros
        while index < chars.count {
            let take = min(chunkDigits, chars.count - index)
            var chunk: UInt64 = 0
            var multiplier: UInt64 = 1
            for position in index..<(index + take) {
                let value = table[Int(chars[position])]
                guard value != LabelEncoding.invalidDigit else {
                    throw DNSWireError(.invalidEncoding, at: position, "byte \(chars[position]) at offset \(position) is not a base36 character")
                }
                chunk = chunk * 36 + UInt64(value)
                multiplier *= 36
            }
            // limb * multiplier + carry < 2^32 * 2^32, so the product never overflows.
            var carry = chunk
            for limb in limbs.indices {
                let product = UInt64(limbs[limb]) * multiplier + carry
                limbs[limb] = UInt32(truncatingIfNeeded: product)
                carry = product >> 32
            }
            if carry > 0 { limbs.append(UInt32(truncatingIfNeeded: carry)) }
            index += take
        }

        var out = [UInt8](repeating: 0, count: zeros)
        out.reserveCapacity(zeros + limbs.count * 4)
        var started = false
        for limb in limbs.reversed() {
            for shift in stride(from: 24, through: 0, by: -8) {
                let byte = UInt8(truncatingIfNeeded: limb >> UInt32(shift))
                if started || byte != 0 {
                    started = true
                    out.append(byte)
                }
            }
        }
        return out
    }

    // MARK: - Exact lengths

    /// Largest input this arithmetic handles exactly; anything bigger saturates.
    private static let maxCharacters = 1 << 60

    /// Smallest c with 36^c >= 256^n, i.e. with floor(log2(36^c)) >= 8n (36^c is never a power
    /// of two for c >= 1). Binary search between 8n/6 and 8n/5, all in integers: no floating
    /// point (and no libm) anywhere in the capacity arithmetic.
    static func encodedLength(forBytes n: Int) -> Int {
        guard n > 0 else { return 0 }
        guard n <= 1 << 56 else { return Int.max }
        let bits = 8 * n
        // 5 < log2(36) < 6, so 36^(bits/6) < 2^bits <= 36^(bits/5 + 1).
        var low = bits / 6
        var high = bits / 5 + 1
        while low < high {
            let middle = low + (high - low) / 2
            if floorLog2OfPowerOf36(middle) >= bits {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return low
    }

    /// Largest n with 256^n <= 36^c.
    static func maxBytes(forCharacters c: Int) -> Int {
        guard c > 0 else { return 0 }
        return floorLog2OfPowerOf36(min(c, maxCharacters)) / 8
    }

    /// floor(log2(36^c)) = 2c + floor(2c * log2(3)), exactly.
    static func floorLog2OfPowerOf36(_ c: Int) -> Int {
        2 * c + floorTimesLog2Of3(2 * c)
    }

    /// log2(3) * 2^120, rounded down (computed to 120 decimal digits and checked against
    /// bit lengths of 3^m). The true value lies in [log2Of3, log2Of3 + 1) / 2^120.
    private static let log2Of3: UInt128 = 0x195c01a39fbd6879fa00b120a068bad

    /// floor(m * log2(3)) for 0 <= m < 2^63. With both bounds of the constant the error is
    /// below m / 2^120; if the two floors differ, m * log2(3) is within that of an integer and
    /// the answer comes from the bit length of 3^m computed exactly.
    static func floorTimesLog2Of3(_ m: Int) -> Int {
        guard m > 0 else { return 0 }
        let lower = fixedPointFloor(UInt128(m), log2Of3)
        let upper = fixedPointFloor(UInt128(m), log2Of3 + 1)
        if lower == upper || m > 1 << 20 { return lower }
        return bitLengthOfPowerOf3(m) - 1
    }

    private static func fixedPointFloor(_ m: UInt128, _ constant: UInt128) -> Int {
        let product = m.multipliedFullWidth(by: constant)
        // (high:low) >> 120; high < 2^56 for m < 2^63, so the result fits.
        return Int(truncatingIfNeeded: product.high << 8 | product.low >> 120)
    }

    /// Bit length of 3^m by schoolbook multiplication; only reached in the fallback above.
    static func bitLengthOfPowerOf3(_ m: Int) -> Int {
        var limbs: [UInt64] = [1]
        var remaining = m
        while remaining > 0 {
            let step = min(remaining, 40)  // 3^40 < 2^64
            var factor: UInt64 = 1
            for _ in 0..<step { factor *= 3 }
            var carry: UInt64 = 0
            for index in limbs.indices {
                let product = limbs[index].multipliedFullWidth(by: factor)
                let (sum, overflow) = product.low.addingReportingOverflow(carry)
                limbs[index] = sum
                carry = product.high &+ (overflow ? 1 : 0)
            }
            if carry > 0 { limbs.append(carry) }
            remaining -= step
        }
        let top = limbs[limbs.count - 1]
        return (limbs.count - 1) * 64 + (64 - top.leadingZeroBitCount)
    }
}
