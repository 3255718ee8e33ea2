public import Base
import Foundation

/// Counts per action and direction: the relay's own account of what it did, printed at exit and
/// written as the log's last line.
public struct ImpairmentSummary: Sendable, Hashable {
    public struct Counts: Sendable, Hashable {
        /// Datagrams that arrived in this direction.
        public var received = 0
        /// Datagrams forwarded (each counted once, whatever its copies).
        public var forwarded = 0
        /// Datagrams written to the socket, copies included.
        public var sent = 0
        public var dropped: [Verdict.Model: Int] = [:]
        public var duplicated = 0
        public var reordered = 0
        public var truncated = 0
        public var delayed = 0
        public var servfail = 0
        /// Queries over the rate limit answered REFUSED (`rateExcess` refuse).
        public var refused = 0
        /// Times the replayed stream started over.
        public var replayWraps = 0
        /// Datagrams lost because the socket refused them (e.g. no route, buffer full).
        public var sendErrors = 0
        /// Forwarded datagrams still waiting (delay, shaper, reordering) when the relay stopped:
        /// logged as forwarded, never sent.
        public var unsentAtExit = 0

        public init() {}

        mutating func count(_ verdict: Verdict, receivedNs: UInt64) {
            received += 1
            switch verdict.action {
            case .forward:
                forwarded += 1
                if verdict.copies > 1 { duplicated += 1 }
                if verdict.reorderGap != nil { reordered += 1 }
                if verdict.truncated { truncated += 1 }
                if verdict.departureNs > receivedNs { delayed += 1 }
            case .drop:
                if let model = verdict.droppedBy { dropped[model, default: 0] += 1 }
            case .servfail:
                servfail += 1
            case .refused:
                refused += 1
            }
            if verdict.replayWrapped { replayWraps += 1 }
        }

        var json: String {
            let drops = Verdict.Model.allCases.compactMap { m in dropped[m].map { "\"\(m.rawValue)\":\($0)" } }.joined(separator: ",")
            return "{\"received\":\(received),\"forwarded\":\(forwarded),\"sent\":\(sent),\"dropped\":{\(drops)},"
                + "\"duplicated\":\(duplicated),\"reordered\":\(reordered),\"truncated\":\(truncated),\"delayed\":\(delayed),"
                + "\"servfail\":\(servfail),\"refused\":\(refused),\"replayWraps\":\(replayWraps),\"sendErrors\":\(sendErrors),\"unsentAtExit\":\(unsentAtExit)}"
        }

        var line: String {
            let drops = Verdict.Model.allCases.compactMap { m in dropped[m].map { "\(m.rawValue) \($0)" } }
            return "received \(received), forwarded \(forwarded) (sent \(sent)), dropped \(dropped.values.reduce(0, +))"
                + (drops.isEmpty ? "" : " (\(drops.joined(separator: ", ")))")
                + ", duplicated \(duplicated), reordered \(reordered), truncated \(truncated), delayed \(delayed), servfail \(servfail)"
                + (replayWraps > 0 ? ", replay wraps \(replayWraps)" : "") + (sendErrors > 0 ? ", send errors \(sendErrors)" : "")
                + (unsentAtExit > 0 ? ", unsent at exit \(unsentAtExit)" : "")
        }
    }

    public var up = Counts()
    public var down = Counts()
    /// Datagrams from the upstream side that did not come from the upstream address (ignored).
    public var foreign = 0
    public var seed: UInt64
    public var seconds: Double = 0
    /// Relay clock of the first and the last arrival (either direction).
    public var firstArrivalNs: UInt64?
    public var lastArrivalNs: UInt64?

    public init(seed: UInt64) { self.seed = seed }

    /// Seconds from the first to the last arrival: the time the relay had traffic.
    public var activeSeconds: Double {
        guard let first = firstArrivalNs, let last = lastArrivalNs, last > first else { return 0 }
        return Double(last - first) / 1e9
    }

    /// Datagrams forwarded (both directions, copies counted once) per second of traffic; nil
    /// without traffic to time.
    public var forwardedPerSecond: Double? {
        activeSeconds > 0 ? Double(up.forwarded + down.forwarded) / activeSeconds : nil
    }

    public subscript(direction: Direction) -> Counts {
        get { direction == .up ? up : down }
        // In place: a get/set pair would copy `dropped` on every datagram.
        _modify {
            if direction == .up { yield &up } else { yield &down }
        }
        set { if direction == .up { up = newValue } else { down = newValue } }
    }

    public var json: String {
        "{\"seed\":\(seed),\"seconds\":\(seconds),\"activeSeconds\":\(activeSeconds),\"up\":\(up.json),\"down\":\(down.json),\"foreign\":\(foreign)}"
    }

    /// Two lines for stderr.
    public var text: String {
        var text = "up:   \(up.line)\ndown: \(down.line)"
        if let rate = forwardedPerSecond {
            text += "\ntraffic: \(String(format: "%.3f", activeSeconds)) s from first to last datagram, \(Int(rate.rounded())) datagrams forwarded per second"
        }
        return text
    }
}
