extension DNSMessage {
    /// The first question's name of a query, as its labels spell it, also when it is longer than the
    /// 255 octets RFC 1035 2.3.4 allows (where `DNSMessage(parsing:)` stops with `.nameTooLong`):
    /// tunnel clients that search their name limit send such names, and the capture must still
    /// tell them as the tunnel's. Lower case, labels joined by dots, no trailing dot.
    ///
    /// Total: nil when the bytes hold no question or the name is not plain labels (a pointer, a
    /// reserved label type, a label over 63 octets) or runs past the message. At most 4096 octets
    /// of name are read.
    public static func firstQuestionName(ignoringLengthLimit bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { raw -> String? in
            var reader = WireReader(raw)
            guard (try? reader.readBytes(4, "header")) != nil, let count = try? reader.readU16("question count"), count >= 1,
                  (try? reader.readBytes(6, "header")) != nil else { return nil }
            var labels: [String] = []
            var octets = 1
            while true {
                guard let length = try? reader.readU8("label length") else { return nil }
                if length == 0 { break }
                guard length <= 63 else { return nil }
                octets += Int(length) + 1
                guard octets <= 4096, let label = try? reader.readBytes(Int(length), "label") else { return nil }
                labels.append(String(decoding: label, as: UTF8.self).lowercased())
            }
            return labels.joined(separator: ".")
        }
    }
}
