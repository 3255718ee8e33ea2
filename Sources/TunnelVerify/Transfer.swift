import Base
import OSLayer
import Foundation
import Results

/// A short bulk download through the tunnel after the first data (`scan --e2e`): an HTTP/1.0 GET
/// of `url`, read until `bytes` body bytes arrived, the server closed, or `timeout` passed.
public struct BulkTransfer: Sendable, Hashable {
    public var url: WhoamiURL
    /// Body bytes to read; the answer may be longer, the rest is not read.
    public var bytes: Int
    public var timeout: Duration

    public init(url: WhoamiURL, bytes: Int, timeout: Duration) {
        self.url = url
        self.bytes = bytes
        self.timeout = timeout
    }
}

/// One bulk download's figures, timed inside the sandbox.
struct BulkSample: Sendable {
    var bodyBytes: Int
    var firstByteNanos: UInt64
    var lastByteNanos: UInt64
}

extension SandboxProbes {
    /// The GET of a `BulkTransfer` from inside the sandbox (or through the engine's SOCKS5 proxy),
    /// timed from the request's send to the first response byte and to the last body byte read
    /// (`SandboxConnection`). Only the HTTP header is kept; body bytes are counted.
    static func bulkGet(_ transfer: BulkTransfer, socks: Endpoint?, namespacePath: String) async -> Result<BulkSample, SandboxProbeFailure> {
        let url = transfer.url
        let wanted = transfer.bytes
        let outcome = await SandboxConnection.exchange(host: url.host, port: url.port, socks: socks, namespacePath: namespacePath,
                                                       request: getRequest(url, agent: "tunnelprobe-e2e"),
                                                       timeout: transfer.timeout) { answer, chunk in
            // Keep bytes until the header's end is among them (at most 16 KiB), then only count.
            let end = Self.headerEnd(answer.kept)
            if let end {
                return (keep: 0, done: answer.received - end + chunk.readableBytes >= wanted)
            }
            if answer.kept.count >= 16_384 { return (keep: 0, done: true) }  // no header end in 16 KiB: fails below
            let joined = answer.kept + (chunk.getBytes(at: chunk.readerIndex, length: chunk.readableBytes) ?? [])
            let body = Self.headerEnd(joined).map { joined.count - $0 } ?? 0
            return (keep: chunk.readableBytes, done: body >= wanted)
        }
        let answer: SandboxConnection.Answer
        switch outcome {
        case .failure(let failure): return .failure(failure)
        case .success(let got): answer = got
        }
        guard let first = answer.firstByteNanos else { return .failure(SandboxProbeFailure("no HTTP answer")) }
        guard let end = Self.headerEnd(answer.kept) else {
            if answer.kept.count >= 16_384 { return .failure(SandboxProbeFailure("no end of the HTTP header in 16 KiB")) }
            return .failure(SandboxProbeFailure("no HTTP answer\(answer.error.map { ": \($0)" } ?? "")"))
        }
        let head = answer.kept
        guard head.starts(with: Array("HTTP/1.".utf8)), head.count > 12, head[9] == UInt8(ascii: "2") else {
            let line = String(decoding: head.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
            return .failure(SandboxProbeFailure("the server answered \(line)"))
        }
        let body = answer.received - end
        if let error = answer.error, body < wanted {
            return .failure(SandboxProbeFailure("stalled after \(body) of \(wanted) bytes: \(error)"))
        }
        // A body still arriving at the deadline is measured as far as it came; one that had stopped
        // for a second or more by then stalled.
        if answer.timedOut, body < wanted, answer.quietAtDeadlineNanos >= 1_000_000_000 {
            return .failure(SandboxProbeFailure("stalled after \(body) of \(wanted) bytes: nothing for \(answer.quietAtDeadlineNanos / 1_000_000) ms before the \(transfer.timeout) deadline"))
        }
        guard body > 0 else { return .failure(SandboxProbeFailure("the answer had no body")) }
        return .success(BulkSample(bodyBytes: min(body, wanted), firstByteNanos: first, lastByteNanos: answer.lastByteNanos))
    }

    /// The offset just after "\r\n\r\n", or nil.
    static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }
}

extension VerifySession {
    /// After the first data through the tunnel: the time it took and, when asked, the bulk
    /// download, sent the way the first data was (through the bridge when there is one, as a plain
    /// connection; else through the SOCKS5 proxy or the TUN). Returns false when the bulk download
    /// failed (the run failed at `bulk`).
    mutating func measureTransfer(dataStarted: ContinuousClock.Instant, process: EngineProcess, bridged: Bool) async -> Bool {
        var figures = VerifyResult.Transfer(firstDataMs: handshakeAt.map { (clock.now - $0).milliseconds })
        defer { transfer = figures }
        guard let bulk = configuration.bulk else { return true }
        figures.bulkURL = bulk.url.description
        figures.bulkRequested = bulk.bytes
        let started = clock.now
        // Only an engine that reads the TUN moves its counters (MasterDnsVPN's is the sandbox's
        // claim on the routes, read by nothing: its data goes through the SOCKS5 listener).
        let countsOnTUN = engine.carriesDataOnTUN(socks: configuration.socks)
        let before = countsOnTUN ? await sandbox.tunCounters() : nil
        var outcome = await SandboxProbes.bulkGet(bulk, socks: bridged ? nil : configuration.socks, namespacePath: sandbox.namespacePath)
        if countsOnTUN, case .success(let sample) = outcome {
            // As for the first data: bytes that did not cross the TUN went around the tunnel.
            let after = await sandbox.tunCounters()
            let packets = before.flatMap { b in after.map { a in a.down &- b.down } } ?? 0
            if packets == 0 {
                outcome = .failure(SandboxProbeFailure("\(sample.bodyBytes) bytes arrived but not through the TUN: traffic goes around the tunnel"))
            }
        }
        switch outcome {
        case .success(let sample):
            let seconds = Double(sample.lastByteNanos) / 1e9
            figures.bulkBytes = sample.bodyBytes
            figures.timeToFirstByteMs = Double(sample.firstByteNanos) / 1e6
            figures.bulkMs = Double(sample.lastByteNanos) / 1e6
            figures.goodputBytesPerSecond = seconds > 0 ? Double(sample.bodyBytes) / seconds : nil
            let rate = figures.goodputBytesPerSecond.map { String(format: "%.0f B/s", $0) } ?? "-"
            record("bulk", started: started, ok: true,
                   detail: "\(sample.bodyBytes) of \(bulk.bytes) bytes from \(bulk.url) in \(String(format: "%.0f", seconds * 1000)) ms: \(rate)")
            return true
        case .failure(let problem):
            figures.error = problem.description
            let hint = await stallHint(log: nil)
            fail("bulk", started: started, reason: "first data passed but the bulk download failed: \(problem)\(hint)",
                 words: Host.lastLines(process.logText, count: 3))
            return false
        }
    }
}
