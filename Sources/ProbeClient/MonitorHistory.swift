import Base
import OSLayer
import Foundation
public import Results

/// `monitor`'s history.jsonl: one JSON line per check, written as it happens, and one per rate
/// measurement when it ends.
///
/// A check's line is built in one buffer kept for the whole run, from each pair's name bytes
/// prepared once, and written with write(2): no String, Data or number formatting per check. The
/// lines used to go through `String(format:)` and `Data`, whose sizes grew with the digits of the
/// time since the start, and every new size left freed chunks in glibc's per-thread cache: memory
/// that grew while the monitor ran (`scripts/bench-monitor.sh`).
public final class MonitorHistory {
    private let fd: Int32
    /// `"resolver":"...","domain":"..."` of each pair, as bytes.
    private let names: [[UInt8]]
    private let targets: [MonitorTarget]
    private var line: [UInt8] = []
    /// The first write error, in words, if any; later lines are not attempted.
    public private(set) var failure: String?

    /// Writes to `fd` (opened and closed by the caller) for `targets`.
    public init(fd: Int32, targets: [MonitorTarget]) {
        self.fd = fd
        self.targets = targets
        names = targets.map { t in
            Array("\"resolver\":\"\(Self.escaped(t.name))\",\"domain\":\"\(Self.escaped(t.zone.description))\"".utf8)
        }
        line.reserveCapacity(1024)
    }

    /// A string's JSON text between quotes; resolvers and domains come from parsed addresses and
    /// DNS names in presentation form, so quotes and backslashes are all there is to escape.
    static func escaped(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }

    /// One check of pair `index` at `at` seconds since the start: pass or the failure, the RTT.
    /// A failed check that was diagnosed adds `"down":true` (even the smallest query failed) or
    /// `"drift"` with the sizes that still passed (`null` for a direction that kept the scan's size).
    public func check(at: Double, pair index: Int, outcome: ProbeOutcome, rttMs: Double?, diagnosed: Bool, drift: SizeDrift?) {
        line.removeAll(keepingCapacity: true)
        append("{\"t\":")
        appendFixed3(at)
        append(",")
        line.append(contentsOf: names[index])
        append(outcome.ok ? ",\"ok\":true" : ",\"ok\":false")
        if let f = outcome.failure {
            append(",\"failure\":\"")
            append(f.rawValue)
            append("\"")
        }
        if let rttMs {
            append(",\"rttMs\":")
            appendFixed3(rttMs)
        }
        if let drift {
            let t = targets[index]
            append(",\"drift\":{\"queryCharacters\":")
            appendOptional(drift.queryCharacters)
            append(",\"answerBytes\":")
            appendOptional(drift.answerBytes)
            append(",\"scanQueryCharacters\":")
            appendInt(t.queryCharacters)
            append(",\"scanAnswerBytes\":")
            appendInt(t.answerBytes)
            append("}")
        } else if diagnosed {
            append(",\"down\":true")
        }
        append("}\n")
        flush()
    }

    /// One rate measurement of pair `index`, written when it ended (`t`, seconds since the start):
    /// under `rate` when it began (`at`), how long it took, the sustainable rate, the first troubled
    /// one, what limited it, loss and RTT percentiles at the sustainable rate (rare: encoded whole).
    public func rate(at: Double, pair index: Int, sample: RateSample) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let encoded = try? encoder.encode(sample) else { return }
        line.removeAll(keepingCapacity: true)
        append("{\"t\":")
        appendFixed3(at)
        append(",")
        line.append(contentsOf: names[index])
        append(",\"rate\":")
        line.append(contentsOf: encoded)
        append("}\n")
        flush()
    }

    private func append(_ text: StaticString) {
        text.withUTF8Buffer { line.append(contentsOf: $0) }
    }

    private func append(_ text: String) {
        line.append(contentsOf: text.utf8)
    }

    private func appendOptional(_ value: Int?) {
        if let value { appendInt(value) } else { append("null") }
    }

    /// Decimal digits of a non-negative integer (a negative one is written as 0: none occur).
    private func appendInt(_ value: Int) {
        var v = max(0, value)
        let start = line.count
        repeat {
            line.append(UInt8(ascii: "0") + UInt8(v % 10))
            v /= 10
        } while v > 0
        line[start...].reverse()
    }

    /// A non-negative value with three decimals, as `%.3f` prints it: rounded to the nearest
    /// thousandth (a value that is halfway in decimal, 1.2345, may round up where printf rounds its
    /// binary value down); not finite or negative is written as 0.000 (times and RTTs are neither).
    private func appendFixed3(_ value: Double) {
        let thousandths = value.isFinite && value > 0 ? Int((value * 1000).rounded()) : 0
        appendInt(thousandths / 1000)
        line.append(UInt8(ascii: "."))
        let fraction = thousandths % 1000
        line.append(UInt8(ascii: "0") + UInt8(fraction / 100))
        line.append(UInt8(ascii: "0") + UInt8(fraction / 10 % 10))
        line.append(UInt8(ascii: "0") + UInt8(fraction % 10))
    }

    private func flush() {
        guard failure == nil else { return }
        do { try SystemCall.writeAll(fd, line) } catch { failure = "\(error)" }
    }
}
