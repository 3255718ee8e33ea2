/// Parameters of the Gilbert-Elliott loss channel, shared by the impairment relay, the simulator and
/// the path report's fit (docs/MEASUREMENT.md): a two-state Markov chain (Good, Bad) stepped once per
/// packet, with
/// - `p` = P(Good -> Bad) and `r` = P(Bad -> Good) per packet,
/// - `h` = P(received | Bad) (h = 0 is Gilbert's model: every packet in Bad is lost),
/// - `k` = P(received | Good) (k = 1 unless given: Elliott's extension).
public struct GilbertElliottParameters: Sendable, Hashable, CustomStringConvertible {
    public var p: Double
    public var r: Double
    public var h: Double
    public var k: Double

    public init(p: Double, r: Double, h: Double = 0, k: Double = 1) {
        self.p = p
        self.r = r
        self.h = h
        self.k = k
    }

    /// Long-run loss rate: pi_B (1 - h) + pi_G (1 - k), with pi_B = p / (p + r).
    public var stationaryLoss: Double {
        guard p + r > 0 else { return 1 - k }
        let bad = p / (p + r)
        return bad * (1 - h) + (1 - bad) * (1 - k)
    }

    /// The text form `p=0.01,r=0.3[,h=0.1][,k=0.99]`, read by `init(text:)`.
    public var description: String {
        var s = "p=\(p),r=\(r),h=\(h)"
        if k != 1 { s += ",k=\(k)" }
        return s
    }

    /// The keys of the text form, in the order messages name them.
    public static let keys = ["p", "r", "h", "k"]

    /// Reads the parameters from key=value fields (`KeyValueList`); keys other than p, r, h, k are the
    /// caller's. p and r are required, each value must be a probability, and p and r cannot both be 0.
    public init(fields: [String: Double]) throws(TextFormError) {
        for key in Self.keys {
            if let v = fields[key], !(0...1).contains(v) {
                throw TextFormError("\(key) must be in [0, 1], got \(v)")
            }
        }
        guard let p = fields["p"], let r = fields["r"] else { throw TextFormError("needs p= and r= (e.g. p=0.01,r=0.3)") }
        guard p > 0 || r > 0 else { throw TextFormError("p and r are both 0: the chain never moves") }
        self.init(p: p, r: r, h: fields["h"] ?? 0, k: fields["k"] ?? 1)
    }

    /// Reads `p=..,r=..[,h=..][,k=..]` and nothing else.
    public init(text: String) throws(TextFormError) {
        let fields = try KeyValueList.parse(text, allowed: Self.keys)
        try self.init(fields: fields)
    }
}

/// A comma-separated list of `key=number` fields, as the model flags take them (`p=0.01,r=0.3`).
public enum KeyValueList {
    /// Every field must be `key=finite number` with a key from `allowed`, each key at most once.
    public static func parse(_ text: some StringProtocol, allowed: [String]) throws(TextFormError) -> [String: Double] {
        var fields: [String: Double] = [:]
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard kv.count == 2 else { throw TextFormError("\"\(part)\" is not key=number") }
            let key = kv[0].lowercased()
            guard allowed.contains(key) else {
                throw TextFormError("\"\(part)\" is not one of \(allowed.map { $0 + "=" }.joined(separator: ", "))")
            }
            guard fields[key] == nil else { throw TextFormError("\(key) given twice") }
            guard let value = Double(kv[1]), value.isFinite else { throw TextFormError("\"\(part)\": \(kv[1]) is not a number") }
            fields[key] = value
        }
        return fields
    }
}

/// Text that does not have the form a parser of this module reads; `reason` is one line with no flag
/// name in it (the command that read the text adds its own).
public struct TextFormError: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
