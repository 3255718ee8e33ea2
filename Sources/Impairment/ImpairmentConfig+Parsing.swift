import Base
import Foundation

/// Why a set of impair flags cannot be used: the flag and the reason, printed as one line.
public struct ImpairmentConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The flag at fault ("--up-loss"), or the pair that contradicts ("--up-loss/--up-ge").
    public let flag: String
    public let reason: String

    public init(_ flag: String, _ reason: String) {
        self.flag = flag
        self.reason = reason
    }

    public var description: String { "\(flag): \(reason)" }
}

extension ImpairmentConfig {
    /// One flag of `tunnelprobe impair`, for parsing and for `--help`.
    public struct Flag: Sendable {
        public let name: String
        public let value: String
        public let help: String
    }

    /// Every flag, in the order `--help` lists them. `X` stands for `up` or `down`.
    public static let flags: [Flag] = [
        Flag(name: "--listen", value: "IP:PORT", help: "where clients send (required)"),
        Flag(name: "--upstream", value: "IP:PORT", help: "the resolver to forward to (required)"),
        Flag(name: "--seed", value: "N", help: "seed of every random choice (default 1)"),
        Flag(name: "--log", value: "FILE", help: "one JSON line per datagram (docs/IMPAIR.md)"),
        Flag(name: "--X-loss", value: "P", help: "Bernoulli loss"),
        Flag(name: "--X-ge", value: "p=,r=[,h=][,k=]", help: "Gilbert-Elliott (docs/IMPAIR.md)"),
        Flag(name: "--X-delay", value: "MS", help: "one-way delay, milliseconds"),
        Flag(name: "--X-jitter", value: "MS", help: "uniform +-MS around the delay, FIFO"),
        Flag(name: "--X-reorder", value: "P[:GAP]", help: "hold until GAP (1) later ones left"),
        Flag(name: "--X-duplicate", value: "P", help: "a second copy"),
        Flag(name: "--X-rate", value: "PPS", help: "token-bucket shaper, datagrams/s"),
        Flag(name: "--X-rate-burst", value: "N", help: "back-to-back datagrams (default 1)"),
        Flag(name: "--X-rate-queue", value: "N", help: "datagrams that may wait (default 100)"),
        Flag(name: "--X-max-qname", value: "N", help: "drop QNAMEs longer than N characters"),
        Flag(name: "--X-max-size", value: "N", help: "act on datagrams over N bytes"),
        Flag(name: "--X-oversize", value: "drop|truncate", help: "truncate (down only): question + TC"),
        Flag(name: "--servfail", value: "P", help: "answer queries SERVFAIL from the relay"),
        Flag(name: "--replay", value: "FILE", help: "replay a fates file (docs/FATES.md)"),
        Flag(name: "--replay-resolver", value: "IP:PORT", help: "whose streams (default: the first)"),
        Flag(name: "--mapping-idle", value: "S", help: "close idle client sockets (default 60)"),
        Flag(name: "--vector-reads", value: "N", help: "datagrams per recvmmsg (default 16)"),
    ]

    /// Parses and checks impair flags; the first problem is thrown with its flag.
    /// `requireEndpoints: false` accepts flags without `--listen`/`--upstream` (for `lab up
    /// --impair`, where the lab supplies them) and fills in placeholders.
    public static func parse(arguments: [String], requireEndpoints: Bool = true) throws(ImpairmentConfigError) -> ImpairmentConfig {
        var values: [String: String] = [:]
        var index = 0
        let known = Set(flags.flatMap { flag in
            flag.name.hasPrefix("--X-") ? ["--up-" + flag.name.dropFirst(4), "--down-" + flag.name.dropFirst(4)] : [flag.name]
        })
        while index < arguments.count {
            var name = arguments[index]
            var value: String?
            if let eq = name.firstIndex(of: "="), name.hasPrefix("--") {
                value = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard known.contains(name) else {
                throw ImpairmentConfigError(name, name.hasPrefix("-") ? "unknown flag (see tunnelprobe impair --help)" : "unexpected argument")
            }
            if value == nil {
                index += 1
                guard index < arguments.count else { throw ImpairmentConfigError(name, "needs a value") }
                value = arguments[index]
            }
            guard values[name] == nil else { throw ImpairmentConfigError(name, "given twice") }
            values[name] = value
            index += 1
        }
        return try build(values, requireEndpoints: requireEndpoints)
    }

    private static func build(_ v: [String: String], requireEndpoints: Bool) throws(ImpairmentConfigError) -> ImpairmentConfig {
        func endpoint(_ flag: String, placeholder: Endpoint) throws(ImpairmentConfigError) -> Endpoint {
            guard let text = v[flag] else {
                if requireEndpoints { throw ImpairmentConfigError(flag, "required") }
                return placeholder
            }
            // Port 0 on --listen binds an ephemeral port (tests, benchmarks).
            guard let e = try? Endpoint(parsing: text, defaultPort: nil, allowZeroPort: flag == "--listen") else {
                throw ImpairmentConfigError(flag, "\"\(text)\" is not a numeric IP:PORT or [IPv6]:PORT with a port in 1...65535")
            }
            return e
        }
        let listen = try endpoint("--listen", placeholder: Endpoint(address: .v4(0xC000_0201), port: 53))
        let upstream = try endpoint("--upstream", placeholder: Endpoint(address: .v4(0xC000_0202), port: 53))
        if let a = try? listen.socketAddress(), let b = try? upstream.socketAddress(), a == b {
            throw ImpairmentConfigError("--listen/--upstream", "both are \(listen): the relay would send to itself")
        }
        var config = ImpairmentConfig(listen: listen, upstream: upstream)
        if let s = v["--seed"] {
            guard let seed = UInt64(s) else { throw ImpairmentConfigError("--seed", "\"\(s)\" is not an integer in 0...\(UInt64.max)") }
            config.seed = seed
        } else {
            config.seed = 1
        }
        if let log = v["--log"] {
            guard !log.isEmpty else { throw ImpairmentConfigError("--log", "empty path") }
            config.logPath = log
        }
        config.up = try direction(.up, v)
        config.down = try direction(.down, v)
        if let s = v["--servfail"] { config.servfail = try probability("--servfail", s) }
        config.replayPath = v["--replay"]
        if let r = v["--replay-resolver"] {
            guard config.replayPath != nil else { throw ImpairmentConfigError("--replay-resolver", "needs --replay") }
            config.replayResolver = r
        }
        if config.replayPath?.isEmpty == true { throw ImpairmentConfigError("--replay", "empty path") }
        if let s = v["--mapping-idle"] {
            config.mappingIdleSeconds = try number("--mapping-idle", s, in: 0.1...86_400)
        }
        if let s = v["--vector-reads"] {
            config.vectorReads = try integer("--vector-reads", s, in: 1...256)
        }
        return config
    }

    private static func direction(_ d: Direction, _ v: [String: String]) throws(ImpairmentConfigError) -> DirectionConfig {
        let x = "--\(d.rawValue)-"
        var c = DirectionConfig()
        if let s = v[x + "loss"] { c.loss = .bernoulli(try probability(x + "loss", s)) }
        if let s = v[x + "ge"] {
            guard c.loss == nil else {
                throw ImpairmentConfigError("\(x)loss/\(x)ge", "choose one loss model per direction")
            }
            c.loss = .gilbertElliott(try gilbertElliott(x + "ge", s))
        }
        if let s = v[x + "delay"] { c.delayMs = try number(x + "delay", s, in: 0...60_000) }
        if let s = v[x + "jitter"] {
            c.jitterMs = try number(x + "jitter", s, in: 0...60_000)
            guard v[x + "delay"] != nil, c.delayMs > 0 else {
                throw ImpairmentConfigError(x + "jitter", "needs \(x)delay above 0 (jitter varies a delay)")
            }
        }
        if let s = v[x + "reorder"] {
            let parts = s.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw ImpairmentConfigError(x + "reorder", "\"\(s)\" is not P or P:GAP") }
            let p = try probability(x + "reorder", String(parts[0]))
            let gap = parts.count == 2 ? try integer(x + "reorder", String(parts[1]), in: 1...1000) : 1
            c.reorder = Reordering(probability: p, gap: gap)
        }
        if let s = v[x + "duplicate"] { c.duplicate = try probability(x + "duplicate", s) }
        if let s = v[x + "rate"] {
            c.rate = try number(x + "rate", s, in: 1...100_000_000)
        }
        for (suffix, limit) in [("rate-burst", 1...1_000_000), ("rate-queue", 0...1_000_000)] {
            guard let s = v[x + suffix] else { continue }
            guard c.rate != nil else { throw ImpairmentConfigError(x + suffix, "needs \(x)rate") }
            let n = try integer(x + suffix, s, in: limit)
            if suffix == "rate-burst" { c.rateBurst = n } else { c.rateQueue = n }
        }
        if let s = v[x + "max-qname"] { c.maxQName = try integer(x + "max-qname", s, in: 1...1_000) }
        if let s = v[x + "max-size"] { c.maxSize = try integer(x + "max-size", s, in: 12...65_535) }
        if let s = v[x + "oversize"] {
            guard let o = DirectionConfig.Oversize(rawValue: s) else {
                throw ImpairmentConfigError(x + "oversize", "\"\(s)\" is neither drop nor truncate")
            }
            guard c.maxSize != nil else { throw ImpairmentConfigError(x + "oversize", "needs \(x)max-size") }
            if d == .up, o == .truncate {
                throw ImpairmentConfigError(x + "oversize", "truncate applies to responses only (--down-oversize); use drop for queries")
            }
            c.oversize = o
        }
        return c
    }

    private static func probability(_ flag: String, _ s: String) throws(ImpairmentConfigError) -> Double {
        guard let p = Double(s), p.isFinite else { throw ImpairmentConfigError(flag, "\"\(s)\" is not a number") }
        guard (0...1).contains(p) else { throw ImpairmentConfigError(flag, "\(s) is not a probability within 0...1") }
        return p
    }

    private static func number(_ flag: String, _ s: String, in range: ClosedRange<Double>) throws(ImpairmentConfigError) -> Double {
        guard let x = Double(s), x.isFinite else { throw ImpairmentConfigError(flag, "\"\(s)\" is not a number") }
        guard range.contains(x) else {
            throw ImpairmentConfigError(flag, "\(s) is outside \(format(range.lowerBound))...\(format(range.upperBound))")
        }
        return x
    }

    private static func integer(_ flag: String, _ s: String, in range: ClosedRange<Int>) throws(ImpairmentConfigError) -> Int {
        guard let x = Int(s) else { throw ImpairmentConfigError(flag, "\"\(s)\" is not an integer") }
        guard range.contains(x) else { throw ImpairmentConfigError(flag, "\(s) is outside \(range.lowerBound)...\(range.upperBound)") }
        return x
    }

    private static func format(_ x: Double) -> String { x == x.rounded() ? String(Int(x)) : String(x) }

    private static func gilbertElliott(_ flag: String, _ s: String) throws(ImpairmentConfigError) -> GilbertElliottParameters {
        do {
            return try GilbertElliottParameters(text: s)
        } catch {
            throw ImpairmentConfigError(flag, error.reason)
        }
    }
}
