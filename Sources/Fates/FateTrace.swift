public import Base
import OSLayer
public import Foundation

/// A per-packet fate sequence (`docs/FATES.md`): what one path did to each datagram, per direction.
///
/// Written by `path --export-fates` and `trace --export-fates`, replayed by `impair --replay`, and read
/// by `simulate --fates`. The type is the contract between those commands; nothing else defines it.
public struct FateTrace: Codable, Sendable, Hashable {
    public static let schemaName = "tunnelprobe.fates/1"

    public var schema: String = FateTrace.schemaName
    public var source: Source
    public var streams: [FateStream]

    public init(source: Source, streams: [FateStream]) {
        self.source = source
        self.streams = streams
    }

    /// Where the fates came from, so a report built on them can say so.
    public struct Source: Codable, Sendable, Hashable {
        /// `path`, `trace`, `impair` or `model`.
        public var kind: String
        /// One line for people, e.g. "path run 20261121-191500-path-3f9a, 20000 probes at 500/s".
        public var description: String
        /// The capture or report the fates were derived from, and its SHA-256 (hex), when there is one.
        public var file: String?
        public var sha256: String?
        /// The seed of the run that produced them, when randomness was involved.
        public var seed: UInt64?

        public init(kind: String, description: String, file: String? = nil, sha256: String? = nil, seed: UInt64? = nil) {
            self.kind = kind
            self.description = description
            self.file = file
            self.sha256 = sha256
            self.seed = seed
        }
    }
}

/// The fates of the datagrams one resolver carried in one direction, in send order.
public struct FateStream: Codable, Sendable, Hashable {
    /// What a stream's datagrams crossed: one direction of the path (Base's `Direction`), or the round
    /// trip, where a client-side capture cannot tell which way a datagram was lost. Coded through its
    /// raw value (the standard library's `RawRepresentable` coding), the strings fates/1 has always used:
    /// `up`, `down`, `roundTrip`.
    public enum Direction: Sendable, Hashable, CaseIterable, RawRepresentable, Codable {
        /// `up` (queries) or `down` (responses). `delayMs` is one-way.
        case oneWay(Base.Direction)
        /// Query and its response together, as a client-side capture sees them. `delayMs` is the RTT.
        case roundTrip

        /// The one-way streams by their fates/1 names.
        public static let up = Direction.oneWay(.up)
        public static let down = Direction.oneWay(.down)
        public static let allCases: [Direction] = [.up, .down, .roundTrip]

        public var rawValue: String {
            switch self {
            case let .oneWay(d): d.rawValue
            case .roundTrip: "roundTrip"
            }
        }

        public init?(rawValue: String) {
            if rawValue == "roundTrip" {
                self = .roundTrip
            } else if let d = Base.Direction(rawValue: rawValue) {
                self = .oneWay(d)
            } else {
                return nil
            }
        }
    }

    /// "ip:port" of the resolver the datagrams crossed.
    public var resolver: String
    /// The tunnel or probe domain, when known.
    public var domain: String?
    public var direction: Direction
    public var packets: [PacketFate]

    public init(resolver: String, domain: String? = nil, direction: Direction, packets: [PacketFate]) {
        self.resolver = resolver
        self.domain = domain
        self.direction = direction
        self.packets = packets
    }
}

/// One datagram: when it was sent, how big it was, whether it arrived and how long it took.
public struct PacketFate: Codable, Sendable, Hashable {
    /// Send time in milliseconds since the start of the trace (one origin for every stream of the file).
    public var sentMs: Double
    /// UDP payload size in bytes (the DNS message).
    public var size: Int
    /// False when it never arrived within the producer's Tmax (RFC 7680 loss).
    public var delivered: Bool
    /// Delay in milliseconds (one-way, or round trip for `roundTrip`); nil when lost or not measured.
    public var delayMs: Double?
    /// How many copies arrived when more than one did (resolver retries, duplicated responses).
    public var copies: Int?

    public init(sentMs: Double, size: Int, delivered: Bool, delayMs: Double? = nil, copies: Int? = nil) {
        self.sentMs = sentMs
        self.size = size
        self.delivered = delivered
        self.delayMs = delayMs
        self.copies = copies
    }
}

/// Why a fates file could not be used: what was wrong and where.
public struct FateTraceError: Error, CustomStringConvertible, Sendable, Equatable {
    public let path: String
    public let reason: String
    public var description: String { "\(path): \(reason)" }
}

extension FateTrace {
    /// Reads and checks a fates file. Every failure names the file and the place inside it.
    public static func load(path: String) throws(FateTraceError) -> FateTrace {
        guard let bytes = SystemCall.readFile(path, limit: JSONLimits.fates.maxBytes + 1) else {
            throw FateTraceError(path: path, reason: "cannot read")
        }
        return try decode(Data(bytes), path: path)
    }

    public static func decode(_ data: Data, path: String = "<fates>") throws(FateTraceError) -> FateTrace {
        if data.isEmpty { throw FateTraceError(path: path, reason: "empty file") }
        do { try JSONLimits.fates.check(data) } catch { throw FateTraceError(path: path, reason: "refused: \(error)") }
        let trace: FateTrace
        do {
            trace = try JSONDecoder().decode(FateTrace.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            throw FateTraceError(path: path, reason: "not JSON: \(context.debugDescription) at \(Self.where(context.codingPath))")
        } catch let DecodingError.keyNotFound(key, context) {
            throw FateTraceError(path: path, reason: "missing \"\(key.stringValue)\" at \(Self.where(context.codingPath))")
        } catch let DecodingError.typeMismatch(_, context) {
            throw FateTraceError(path: path, reason: "wrong type at \(Self.where(context.codingPath)): \(context.debugDescription)")
        } catch let DecodingError.valueNotFound(_, context) {
            throw FateTraceError(path: path, reason: "null at \(Self.where(context.codingPath))")
        } catch {
            throw FateTraceError(path: path, reason: "cannot decode (\(error))")
        }
        try trace.validate(path: path)
        return trace
    }

    /// The rules the format promises beyond its JSON shape (`docs/FATES.md`, "Rules").
    public func validate(path: String = "<fates>") throws(FateTraceError) {
        guard schema == Self.schemaName else {
            throw FateTraceError(path: path, reason: "schema is \"\(schema)\", expected \"\(Self.schemaName)\"")
        }
        guard !streams.isEmpty else { throw FateTraceError(path: path, reason: "no streams") }
        for (s, stream) in streams.enumerated() {
            guard !stream.packets.isEmpty else {
                throw FateTraceError(path: path, reason: "streams[\(s)] (\(stream.resolver) \(stream.direction.rawValue)) has no packets")
            }
            var previous = -Double.infinity
            for (i, p) in stream.packets.enumerated() {
                let at = "streams[\(s)].packets[\(i)]"
                guard p.sentMs.isFinite, p.sentMs >= 0 else { throw FateTraceError(path: path, reason: "\(at).sentMs must be >= 0") }
                guard p.sentMs >= previous else { throw FateTraceError(path: path, reason: "\(at).sentMs goes back in time") }
                guard p.size >= 0, p.size <= 65535 else { throw FateTraceError(path: path, reason: "\(at).size must be 0...65535") }
                if let d = p.delayMs {
                    guard d.isFinite, d >= 0 else { throw FateTraceError(path: path, reason: "\(at).delayMs must be >= 0") }
                    guard p.delivered else { throw FateTraceError(path: path, reason: "\(at) is lost but has a delayMs") }
                }
                if let c = p.copies, c < 1 || !p.delivered {
                    throw FateTraceError(path: path, reason: "\(at).copies must be >= 1 and only on a delivered packet")
                }
                previous = p.sentMs
            }
        }
    }

    private static func `where`(_ path: [any CodingKey]) -> String {
        if path.isEmpty { return "top level" }
        return path.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingCharacters(in: CharacterSet(charactersIn: "."))
    }
}
