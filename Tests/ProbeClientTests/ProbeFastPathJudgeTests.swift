import Base
import DNSWire
import NIOCore
import NIOPosix
@testable import ProbeClient
import ProbeProtocol
import Testing

/// `Prober.judge` reads an answer laid out as the responder writes it in place
/// (`Prober.expectedReply`) instead of parsing it; for every answer, mutated or not, the outcome
/// must be the one the full parse gives.
@Suite struct ProbeFastPathJudgeTests {
    static let zone = try! DNSName("vpn.lab.test")

    /// The responder's answer to `probe` (what `ProbeResponder` writes: header flags, the question,
    /// one TXT answer under a compression pointer, an OPT record when asked for).
    static func answer(to probe: Prober.PreparedUpload, key: ProbeKey, observed: ProbeReply.Observed?, edns: Bool,
                       integrity: ProbeName.Integrity = .intact) throws -> [UInt8] {
        let query = try DNSMessage(parsing: probe.bytes)
        let received = try ProbeName.read(query.questions[0].name, zone: zone, key: key)
        var reply = ProbeReply(answering: received)
        reply.observed = observed
        reply.integrity = integrity
        var header = DNSHeader(id: 0x2345)
        header.isResponse = true
        header.recursionDesired = true
        header.authoritative = true
        let message = DNSMessage(header: header, questions: query.questions,
                                 answers: [DNSResourceRecord(name: query.questions[0].name, ttl: 0,
                                                             rdata: .txt([reply.sealed(nonce: received.meta.nonce, key: key)]))],
                                 edns: edns ? EDNS(udpPayloadSize: 1232) : nil)
        return try message.serialized()
    }

    static func same(_ a: ProbeOutcome, _ b: ProbeOutcome) -> Bool {
        a.failure == b.failure && a.detail == b.detail && a.rttNanos == b.rttNanos && a.responseSize == b.responseSize
            && a.caseChanged == b.caseChanged && a.observed == b.observed && a.cachedError == b.cachedError
            && a.congested == b.congested && a.lostWithOthers == b.lostWithOthers
    }

    /// The responder's own answers (with and without OPT, both reply lengths) take the fast path
    /// and are judged intact; 20,000 mutations of them (a byte changed, the answer cut or padded,
    /// a count changed) get the outcome the full parse gives, whichever path reads them.
    @Test func theFastPathAgreesWithTheFullParse() async throws {
        let key = try ProbeKey(bytes: (0..<32).map { UInt8($0) })
        let engine = QueryEngine(seed: 1)
        let prober = Prober(engine: engine, key: key)
        var rng = SplitMix64(seed: 27)
        var fast = 0, mutations = 0
        for (index, characters) in [ProbeMeta.characterCount, 120, 200].enumerated() {
            let shapes: [(ProbeReply.Observed?, Bool)] = [(nil, false), (ProbeReply.Observed(advertisedSize: 1232, overTCP: false, honorsEDNS: false), true)]
            for (observed, edns) in shapes {
                let probe = try #require(prober.prepareUpload(zone: Self.zone, characters: characters,
                                                              kind: index == 0 ? .echo : .upload))
                let good = try Self.answer(to: probe, key: key, observed: observed, edns: edns)
                #expect(Prober.expectedReply(good, query: probe.bytes) != nil, "the responder's answer misses the fast path")
                let intact = prober.judge(.response(good, rttNanos: 5), for: probe)
                #expect(intact.ok && intact.observed == observed, "\(String(describing: intact.failure))")
                #expect(Self.same(intact, prober.judgeByParsing(.response(good, rttNanos: 5), for: probe)))
                // Integrity the responder reports is read the same way on both paths.
                let changed = try Self.answer(to: probe, key: key, observed: observed, edns: edns, integrity: .caseChanged)
                #expect(Self.same(prober.judge(.response(changed, rttNanos: 5), for: probe),
                                  prober.judgeByParsing(.response(changed, rttNanos: 5), for: probe)))
                for _ in 0..<3_400 {
                    var bytes = good
                    switch rng.next() % 4 {
                    case 0:
                        let at = Int(rng.next() % UInt64(bytes.count))
                        bytes[at] = UInt8(truncatingIfNeeded: rng.next())
                    case 1:
                        bytes.removeLast(Int(rng.next() % UInt64(bytes.count)))
                    case 2:
                        bytes += (0..<Int(rng.next() % 20)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                    default:
                        // A header count or flag byte.
                        let at = 2 + Int(rng.next() % 10)
                        bytes[at] = [0, 1, 2, 0x80, 0x81, 0x82, 0x83, UInt8(truncatingIfNeeded: rng.next())][Int(rng.next() % 8)]
                    }
                    if Prober.expectedReply(bytes, query: probe.bytes) != nil { fast += 1 }
                    mutations += 1
                    let result = QueryResult.response(bytes, rttNanos: 9)
                    let a = prober.judge(result, for: probe)
                    let b = prober.judgeByParsing(result, for: probe)
                    #expect(Self.same(a, b), "mutation \(bytes) of \(good): \(String(describing: a.failure)) vs \(String(describing: b.failure))")
                }
            }
        }
        // Both paths were exercised by the mutations.
        #expect(fast > 100 && fast < mutations - 1_000, "\(fast) of \(mutations) mutations took the fast path")
        await engine.shutdown()
    }
}
