public import Fates
import Results

/// Why a capture gives no fates to simulate (`simulate --pcap`). Every message names the capture.
public struct CaptureFatesError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: Sendable, Equatable {
        /// The capture cannot be opened: missing, unreadable, not pcap or pcapng.
        case unreadable
        /// A record is cut or corrupt; `description` gives the byte offset where libpcap stopped.
        case malformed
        /// The capture holds no DNS query.
        case noQueries
        /// The fates made from it break the format (docs/FATES.md).
        case invalidFates
    }

    public let code: Code
    public let description: String

    init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

extension FateTrace {
    /// A capture's per-query fates, as `simulate --pcap` replays them: the whole trace analysis
    /// (docs/TRACE.md) with fates recorded, a query not answered within `tmaxSeconds` lost (RFC 7680
    /// Tmax), one `roundTrip` stream per resolver and tunnel domain. `sha256`, the capture's digest,
    /// goes into the source for the report.
    public init(capture path: String, tmaxSeconds: Double, sha256: String?) throws(CaptureFatesError) {
        var options = TraceOptions()
        options.tmaxNanos = Int64(tmaxSeconds * 1e9)
        options.recordFates = true
        var analyzer = TraceAnalyzer(options: options)
        let file: TraceFile
        do { file = try analyzer.read(path: path) } catch { throw CaptureFatesError(.unreadable, "\(error)") }
        if let reason = file.error {
            throw CaptureFatesError(.malformed, "\(path): \(reason)" + (file.errorOffset.map { " (at byte offset \($0))" } ?? ""))
        }
        analyzer.finish()
        let trace = analyzer.fateTrace(source: .init(kind: "trace", description: "trace of \(path), Tmax \(tmaxSeconds) s",
                                                     file: path, sha256: sha256))
        guard !trace.streams.isEmpty else {
            throw CaptureFatesError(.noQueries, "\(path): no DNS queries in the capture, nothing to simulate")
        }
        do { try trace.validate(path: path) } catch { throw CaptureFatesError(.invalidFates, "\(error)") }
        self = trace
    }
}
