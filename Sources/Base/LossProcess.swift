/// Which datagrams a channel loses: the loss process the impairment relay (`impair --up-loss`,
/// `--up-ge`) and the simulator (`simulate --model`) both run, with one text form and one parser.
/// What each adds around it (the relay's delay and shaping, the simulator's delay and rate) stays theirs.
public enum LossProcess: Sendable, Hashable, CustomStringConvertible {
    /// Every datagram is lost independently with probability p: RFC 3357's random loss.
    case bernoulli(Double)
    /// The two-state chain `GilbertElliottParameters` describes.
    case gilbertElliott(GilbertElliottParameters)

    /// The model's name in the text form (`bernoulli:p=0.05`, `ge:p=0.01,r=0.3,h=0.2`).
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case bernoulli
        case ge
    }

    public var kind: Kind {
        switch self {
        case .bernoulli: .bernoulli
        case .gilbertElliott: .ge
        }
    }

    /// Long-run loss rate: p for Bernoulli; for Gilbert-Elliott the stationary loss of the chain.
    public var meanLoss: Double {
        switch self {
        case let .bernoulli(p): p
        case let .gilbertElliott(ge): ge.stationaryLoss
        }
    }

    /// The text form, read back by `init(text:)`: `bernoulli:p=0.05` or `ge:p=..,r=..,h=..[,k=..]`.
    public var description: String {
        switch self {
        case let .bernoulli(p): "bernoulli:p=\(p)"
        case let .gilbertElliott(ge): "ge:\(ge)"
        }
    }

    /// The keys each model reads.
    public static func keys(_ kind: Kind) -> [String] {
        kind == .bernoulli ? ["p"] : GilbertElliottParameters.keys
    }

    /// Reads `bernoulli:p=P` or `ge:p=P,r=R[,h=H][,k=K]` and nothing else.
    public init(text: String) throws(TextFormError) {
        let (kind, fields) = try Self.fields(text)
        try self.init(kind, fields: fields)
    }

    /// Splits `model:key=value,...` into the model and its fields, without checking the values. Keys
    /// other than the model's own must be in `extraKeys` (the caller's, such as the simulator's `delay=`);
    /// the caller checks those, then builds the process with `init(_:fields:)`.
    public static func fields(_ text: String, extraKeys: [String] = []) throws(TextFormError) -> (Kind, [String: Double]) {
        let head = text.split(separator: ":", maxSplits: 1)
        guard let name = head.first, let kind = Kind(rawValue: name.lowercased()) else {
            throw TextFormError("unknown model (bernoulli:p=..., or ge:p=...,r=...,h=...)")
        }
        let fields = head.count == 2 ? try KeyValueList.parse(head[1], allowed: keys(kind) + extraKeys) : [:]
        return (kind, fields)
    }

    /// The process of `kind` from its fields (`fields(_:extraKeys:)`); keys it does not read are ignored.
    /// p is required and, like every value, a probability; Gilbert-Elliott's rules are `GilbertElliottParameters(fields:)`'s.
    public init(_ kind: Kind, fields: [String: Double]) throws(TextFormError) {
        switch kind {
        case .bernoulli:
            guard let p = fields["p"] else { throw TextFormError("p= is required") }
            guard (0...1).contains(p) else { throw TextFormError("p must be in [0, 1], got \(p)") }
            self = .bernoulli(p)
        case .ge:
            self = .gilbertElliott(try GilbertElliottParameters(fields: fields))
        }
    }
}
