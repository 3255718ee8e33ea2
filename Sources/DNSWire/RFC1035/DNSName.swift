/// A domain name as a sequence of raw labels (RFC 1035 3.1).
///
/// Labels are bytes, not text: tunnels put arbitrary octets and mixed case in them, so nothing is
/// normalised. `==` and `hash` compare bytes exactly; use `equalsIgnoringCase` or `lowercased()`
/// for the ASCII-only case folding of RFC 4343.
public struct DNSName: Hashable, Sendable, CustomStringConvertible {
    /// The uncompressed wire form without the final root octet: (length, bytes) per label.
    /// One flat array is one allocation per parsed name and makes exact comparison a memcmp.
    /// Invariant: every length is 1...63 and `storage.count + 1 <= 255`.
    internal private(set) var storage: [UInt8]

    public static let maxWireLength = 255
    public static let maxLabelLength = 63

    public static let root = DNSName(uncheckedStorage: [])

    /// Wraps storage the caller has already validated (the wire reader and `appending`).
    internal init(uncheckedStorage: [UInt8]) {
        self.storage = uncheckedStorage
    }

    /// Builds a name from raw labels; each must be 1...63 bytes and the whole name at most
    /// 255 octets on the wire (RFC 1035 2.3.4). An empty array is the root.
    public init(labels: [[UInt8]]) throws(DNSWireError) {
        var total = 0
        for (index, label) in labels.enumerated() {
            guard !label.isEmpty else {
                throw DNSWireError(.emptyLabel, "label \(index) is empty")
            }
            guard label.count <= DNSName.maxLabelLength else {
                throw DNSWireError(.labelTooLong, "label \(index) has \(label.count) octets, more than 63")
            }
            total += label.count + 1
        }
        guard total + 1 <= DNSName.maxWireLength else {
            throw DNSWireError(.nameTooLong, "name needs \(total + 1) octets on the wire, more than 255")
        }
        var storage: [UInt8] = []
        storage.reserveCapacity(total)
        for label in labels {
            storage.append(UInt8(truncatingIfNeeded: label.count))
            storage.append(contentsOf: label)
        }
        self.storage = storage
    }

    /// `payload` cut into labels of `QNameCapacity.maxLabelCharacters` (all full but the last, as
    /// `QNameCapacity.labels(splitting:)` cuts them) in front of `zone`: the same name as
    /// `DNSName(labels: QNameCapacity.labels(splitting: payload) + zone.labels)`, written straight
    /// into the flat storage (a probe name per query; the label arrays cost more than the name).
    public init(payload: [UInt8], under zone: DNSName) throws(DNSWireError) {
        let labelLength = QNameCapacity.maxLabelCharacters
        let labels = (payload.count + labelLength - 1) / labelLength
        let total = payload.count + labels + zone.storage.count
        guard total + 1 <= DNSName.maxWireLength else {
            throw DNSWireError(.nameTooLong, "name needs \(total + 1) octets on the wire, more than 255")
        }
        let zoneStorage = zone.storage
        storage = [UInt8](unsafeUninitializedCapacity: total) { buffer, initialized in
            var written = 0
            var start = 0
            payload.withUnsafeBufferPointer { source in
                while start < source.count {
                    let end = min(start + labelLength, source.count)
                    buffer[written] = UInt8(truncatingIfNeeded: end - start)
                    written += 1
                    for index in start..<end {
                        buffer[written] = source[index]
                        written += 1
                    }
                    start = end
                }
            }
            for byte in zoneStorage {
                buffer[written] = byte
                written += 1
            }
            initialized = written
        }
    }

    /// Parses dotted presentation text (RFC 1035 5.1): an optional trailing dot, "." or "" for
    /// the root, `\DDD` (three decimal digits, 0...255) and `\X` (X taken literally) escapes.
    /// Unescaped bytes outside printable ASCII are refused, so a stray space or a non-ASCII
    /// letter in a command-line domain is caught instead of going on the wire.
    public init(_ text: String) throws(DNSWireError) {
        let chars = Array(text.utf8)
        if chars.isEmpty || chars == [UInt8(ascii: ".")] {
            self = .root
            return
        }
        var storage: [UInt8] = []
        storage.reserveCapacity(chars.count + 1)
        var lengthIndex = 0
        storage.append(0)
        var labelLength = 0
        var index = 0
        var endedWithDot = false
        while index < chars.count {
            let char = chars[index]
            if char == UInt8(ascii: ".") {
                guard labelLength > 0 else {
                    throw DNSWireError(.emptyLabel, at: index, "empty label before the dot at character \(index)")
                }
                storage[lengthIndex] = UInt8(truncatingIfNeeded: labelLength)
                index += 1
                if index == chars.count {
                    endedWithDot = true
                    break
                }
                lengthIndex = storage.count
                storage.append(0)
                labelLength = 0
                continue
            }
            let start = index
            let byte: UInt8
            if char == UInt8(ascii: "\\") {
                guard index + 1 < chars.count else {
                    throw DNSWireError(.invalidCharacter, at: index, "escape at the end of the text")
                }
                let next = chars[index + 1]
                if DNSName.isDigit(next) {
                    guard index + 3 < chars.count,
                          DNSName.isDigit(chars[index + 2]), DNSName.isDigit(chars[index + 3])
                    else {
                        throw DNSWireError(.invalidCharacter, at: index, "\\DDD escape needs three decimal digits")
                    }
                    let value = Int(next - 48) * 100 + Int(chars[index + 2] - 48) * 10 + Int(chars[index + 3] - 48)
                    guard value <= 255 else {
                        throw DNSWireError(.invalidCharacter, at: index, "\\DDD escape \(value) is above 255")
                    }
                    byte = UInt8(value)
                    index += 4
                } else {
                    guard next >= 0x20, next <= 0x7E else {
                        throw DNSWireError(.invalidCharacter, at: index + 1, "escaped byte \(next) is not printable ASCII")
                    }
                    byte = next
                    index += 2
                }
            } else {
                guard char >= 0x21, char <= 0x7E else {
                    throw DNSWireError(.invalidCharacter, at: index, "byte \(char) is not printable ASCII; escape it as \\DDD")
                }
                byte = char
                index += 1
            }
            labelLength += 1
            guard labelLength <= DNSName.maxLabelLength else {
                throw DNSWireError(.labelTooLong, at: start, "label longer than 63 octets at character \(start)")
            }
            storage.append(byte)
            guard storage.count + 1 <= DNSName.maxWireLength else {
                throw DNSWireError(.nameTooLong, at: start, "name longer than 255 octets on the wire at character \(start)")
            }
        }
        if !endedWithDot {
            // The loop only leaves without a trailing dot after appending at least one byte.
            storage[lengthIndex] = UInt8(truncatingIfNeeded: labelLength)
        }
        self.storage = storage
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    // MARK: - Shape

    public var isRoot: Bool { storage.isEmpty }

    /// Octets on the wire uncompressed: sum(label.count + 1) + 1 for the root label.
    public var wireLength: Int { storage.count + 1 }

    public var labelCount: Int {
        var count = 0
        var index = 0
        while index < storage.count {
            count += 1
            index += Int(storage[index]) + 1
        }
        return count
    }

    /// The raw labels, leftmost first; the root has none. Built on demand from the flat storage.
    public var labels: [[UInt8]] {
        labels(in: 0..<storage.count)
    }

    private func labels(in range: Range<Int>) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var index = range.lowerBound
        while index < range.upperBound {
            let length = Int(storage[index])
            result.append(Array(storage[(index + 1)..<(index + 1 + length)]))
            index += length + 1
        }
        return result
    }

    // MARK: - Text

    /// Presentation length without the trailing dot (the 253-character limit people quote, for
    /// names without escapes); 0 for the root. Counts escapes as `description` writes them.
    public var textLength: Int {
        if storage.isEmpty { return 0 }
        var length = -1  // one dot fewer than labels
        var index = 0
        while index < storage.count {
            let labelLength = Int(storage[index])
            length += 1
            for byte in storage[(index + 1)..<(index + 1 + labelLength)] {
                length += DNSName.escapedWidth(byte)
            }
            index += labelLength + 1
        }
        return length
    }

    private static func escapedWidth(_ byte: UInt8) -> Int {
        if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "\\") { return 2 }
        if byte < 0x21 || byte > 0x7E { return 4 }
        return 1
    }

    /// "a.b.c" without a trailing dot; "." for the root. '.' and '\' inside a label become
    /// "\." and "\\", bytes outside printable ASCII become \DDD, so `DNSName(description)`
    /// gives back the same bytes.
    public var description: String {
        String(decoding: presentationBytes, as: UTF8.self)
    }

    /// The UTF-8 bytes of `description`, without building a String (the probe tag binds them).
    public var presentationBytes: [UInt8] {
        if storage.isEmpty { return [UInt8(ascii: ".")] }
        var out: [UInt8] = []
        out.reserveCapacity(storage.count + 8)
        writePresentation(lowercased: false) { out.append($0) }
        return out
    }

    /// `lowercased().presentationBytes`, handed to `body` from a buffer on the stack: what a probe's
    /// tag binds, once per probe, without the two arrays (issue 27, item 9).
    public func withLowercasedPresentationBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        if storage.isEmpty {
            return withUnsafeBytes(of: UInt8(ascii: ".")) { body($0) }
        }
        // At most 4 characters per storage byte (a \DDD escape).
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: storage.count * 4) { buffer in
            var written = 0
            writePresentation(lowercased: true) { byte in
                buffer[written] = byte
                written += 1
            }
            return body(UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: buffer[0..<written])))
        }
    }

    /// The presentation bytes one at a time (`presentationBytes`), of the lowercased name with `lowercased`.
    @inline(__always)
    private func writePresentation(lowercased: Bool, _ emit: (UInt8) -> Void) {
        var index = 0
        while index < storage.count {
            if index > 0 { emit(UInt8(ascii: ".")) }
            let labelLength = Int(storage[index])
            for raw in storage[(index + 1)..<(index + 1 + labelLength)] {
                let byte = lowercased ? DNSName.foldCase(raw) : raw
                switch DNSName.escapedWidth(byte) {
                case 1:
                    emit(byte)
                case 2:
                    emit(UInt8(ascii: "\\"))
                    emit(byte)
                default:
                    emit(UInt8(ascii: "\\"))
                    emit(48 + byte / 100)
                    emit(48 + (byte / 10) % 10)
                    emit(48 + byte % 10)
                }
            }
            index += labelLength + 1
        }
    }

    // MARK: - Case and hierarchy

    /// ASCII-only lowercasing (RFC 4343 2). Length octets are at most 63, below "A", so the flat
    /// storage can be folded byte by byte without touching them.
    public func lowercased() -> DNSName {
        DNSName(uncheckedStorage: storage.map(DNSName.foldCase))
    }

    @inline(__always)
    internal static func foldCase(_ byte: UInt8) -> UInt8 {
        byte &- 0x41 < 26 ? byte | 0x20 : byte
    }

    public func equalsIgnoringCase(_ other: DNSName) -> Bool {
        guard storage.count == other.storage.count else { return false }
        // Mostly the very same bytes (an answer echoes the question): one memcmp.
        if storage == other.storage { return true }
        for index in storage.indices where DNSName.foldCase(storage[index]) != DNSName.foldCase(other.storage[index]) {
            return false
        }
        return true
    }

    /// The storage offset where a suffix of `suffix.storage.count` bytes would start, if that
    /// offset is a label boundary of this name and the bytes there match ignoring ASCII case.
    private func suffixBoundary(of suffix: DNSName) -> Int? {
        let start = storage.count - suffix.storage.count
        guard start >= 0 else { return nil }
        var index = 0
        while index < start {
            index += Int(storage[index]) + 1
        }
        guard index == start else { return nil }
        var other = 0
        while index < storage.count {
            guard DNSName.foldCase(storage[index]) == DNSName.foldCase(suffix.storage[other]) else { return nil }
            index += 1
            other += 1
        }
        return start
    }

    /// Case-insensitive; every name is a subdomain of itself and of the root.
    public func isSubdomain(of other: DNSName) -> Bool {
        suffixBoundary(of: other) != nil
    }

    /// The labels in front of `suffix` (matched ignoring ASCII case), leftmost first; `[]` when
    /// the names are equal, nil when this name is not under `suffix`.
    public func prefixLabels(droppingSuffix suffix: DNSName) -> [[UInt8]]? {
        guard let boundary = suffixBoundary(of: suffix) else { return nil }
        return labels(in: 0..<boundary)
    }

    /// This name followed by `suffix`; throws `.nameTooLong` past 255 octets.
    public func appending(_ suffix: DNSName) throws(DNSWireError) -> DNSName {
        let total = storage.count + suffix.storage.count + 1
        guard total <= DNSName.maxWireLength else {
            throw DNSWireError(.nameTooLong, "appended name needs \(total) octets on the wire, more than 255")
        }
        return DNSName(uncheckedStorage: storage + suffix.storage)
    }
}
