import DNSWire
import Foundation
import NIOCore
@testable import ProbeClient
import ProbeProtocol
import Testing
@testable import Results

// `scan --server masterdnsvpn` speaks MasterDnsVPN's own MTU-test requests. These tests hold its
// codec to what the real engine sent and what the real server answered, in captures of the Go
// client's MTU test through unbound to the Go server:
// - Tests/EngineModelsTests/Fixtures/mdv-go-L700.pcap and -L1100.pcap (method 1, that RECORDING.md);
// - Tests/ProbeClientTests/Fixtures/mdv-server/go-*.pcap (every method; its RECORDING.md).
// Each request the engine sent is read back with this codec, rebuilt by it (same code, padding and
// nonce) and compared with the name on the wire character for character; each answer of the server
// is judged as a scan judges it, and must pass exactly when the engine logged that size as passed.
@Suite struct MasterDnsVPNRecordedExchangeTests {
    static let key = "0123456789abcdef0123456789abcdef"
    static let zone = try! DNSName("vpn.lab.test")
    static let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    struct Recording: CustomStringConvertible, Sendable {
        var path: String
        var method: Int
        var base64 = false
        var key = MasterDnsVPNRecordedExchangeTests.key
        var description: String { (path as NSString).lastPathComponent }
        var url: URL { MasterDnsVPNRecordedExchangeTests.here.appendingPathComponent(path) }
        var log: String { (try? String(contentsOf: url.deletingPathExtension().appendingPathExtension("log"), encoding: .utf8)) ?? "" }
    }

    static let engineModelRuns = [
        Recording(path: "../EngineModelsTests/Fixtures/mdv-go-L700.pcap", method: 1),
        Recording(path: "../EngineModelsTests/Fixtures/mdv-go-L1100.pcap", method: 1),
    ]
    /// The server keeps a key of 16 characters for method 3 and 24 for method 4 (RECORDING.md).
    static let serverRuns: [Recording] = (0...5).map {
        Recording(path: "Fixtures/mdv-server/go-m\($0).pcap", method: $0,
                  key: String(key.prefix(MasterDnsVPNMTUProbe.serverKeyLength(method: $0))))
    }
        + [Recording(path: "Fixtures/mdv-server/go-m5-b64.pcap", method: 5, base64: true)]
    static var everyRun: [Recording] {
        engineModelRuns + serverRuns.filter { FileManager.default.fileExists(atPath: $0.url.path) }
    }

    /// One UDP datagram of a classic little-endian Ethernet pcap: the client's port and the DNS message.
    struct Datagram { var clientPort: UInt16; var toResolver: Bool; var dns: [UInt8] }

    static func datagrams(_ url: URL) throws -> [Datagram] {
        let b = [UInt8](try Data(contentsOf: url))
        func u16(_ i: Int) -> Int { Int(b[i]) << 8 | Int(b[i + 1]) }
        func le32(_ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 | Int(b[i + 3]) << 24 }
        try #require(b.count >= 24 && le32(0) == 0xa1b2_c3d4 && le32(20) == 1, "not a little-endian Ethernet pcap")
        var out: [Datagram] = []
        var at = 24
        while at + 16 <= b.count {
            let caplen = le32(at + 8), frame = at + 16
            at = frame + caplen
            guard at <= b.count, caplen > 42, u16(frame + 12) == 0x0800, b[frame + 23] == 17 else { continue }
            let udp = frame + 14 + Int(b[frame + 14] & 0x0f) * 4
            let (sport, dport, length) = (u16(udp), u16(udp + 2), u16(udp + 4))
            guard udp + length <= at else { continue }
            out.append(Datagram(clientPort: UInt16(dport == 53 ? sport : dport), toResolver: dport == 53,
                                dns: Array(b[(udp + 8)..<(udp + length)])))
        }
        return out
    }

    struct Exchange {
        var request: MasterDnsVPNMTUProbe.Request
        var frame: MasterDnsVPNFrame
        var nonce: [UInt8]
        var nameOnWire: DNSName
        var response: DNSMessage?
        var responseSize: Int
    }

    static func exchanges(_ run: Recording) throws -> (probe: MasterDnsVPNMTUProbe, exchanges: [Exchange]) {
        let probe = MasterDnsVPNMTUProbe(cipher: try MasterDnsVPNCipher(method: run.method, keyText: run.key), base64Replies: run.base64)
        var open: [String: Exchange] = [:]
        var done: [Exchange] = []
        for d in try datagrams(run.url) {
            let message = try DNSMessage(parsing: d.dns)
            let slot = "\(d.clientPort)/\(message.header.id)"
            if d.toResolver {
                let name = try #require(message.questions.first?.name)
                let parsed = try #require(probe.parseRequest(name: name, zone: zone), "\(run): \(name) is not an MTU request")
                open[slot] = Exchange(request: parsed.request, frame: parsed.frame, nonce: parsed.nonce, nameOnWire: name,
                                      response: nil, responseSize: 0)
            } else if var e = open.removeValue(forKey: slot) {
                e.response = message
                e.responseSize = d.dns.count
                done.append(e)
            }
        }
        return (probe, done + open.values)
    }

    /// The engine's own requests, read back and rebuilt by this codec, are the same names.
    @Test(arguments: everyRun)
    func theEnginesRequestsAreRebuiltExactly(run: Recording) throws {
        let (probe, exchanges) = try Self.exchanges(run)
        #expect(exchanges.count >= 10, "\(run): \(exchanges.count) exchanges")
        for e in exchanges {
            #expect(e.frame.sessionID == 255)
            let padding = Array(e.frame.payload[(e.request.type == .mtuUpRequest ? 5 : 7)...])
            let rebuilt = e.request.type == .mtuUpRequest
                ? probe.upload(size: e.request.size, zone: Self.zone, code: e.request.code, padding: padding, nonce: e.nonce)
                : probe.download(size: e.request.size, uploadMTU: e.frame.payload.count, zone: Self.zone, code: e.request.code,
                                 padding: padding, nonce: e.nonce)
            let name = try #require(rebuilt?.name, "\(run): could not rebuild \(e.request.type) \(e.request.size)")
            #expect(name.lowercased() == e.nameOnWire.lowercased(), "\(run): \(e.request.type) \(e.request.size)")
            // The engine pads with zeros (which with XOR shows the key: docs/ENGINES.md).
            #expect(padding.allSatisfy { $0 == 0 })
        }
    }

    /// Every answer the server sent is judged as the scan judges it, and passes exactly for the
    /// sizes the engine's log says passed.
    @Test(arguments: everyRun)
    func theServersAnswersAreJudgedAsTheEngineJudgedThem(run: Recording) throws {
        let (probe, exchanges) = try Self.exchanges(run)
        let log = run.log
        let passedUp = Set(numbers(after: "Upload test passed: Upload MTU ", in: log))
        let passedDown = Set(numbers(after: "Download test passed: Download MTU ", in: log))
        var judged = (up: 0, down: 0)
        for e in exchanges {
            guard let response = e.response else { continue }
            var base = ProbeOutcome(rttNanos: 1, responseSize: e.responseSize)
            if response.header.truncated { base.failure = .tc } else if response.rcode != .noError { base.failure = .rcode }
            let outcome = base.failure == nil ? MasterDnsVPNServerProber.judge(response, base, request: e.request, probe: probe) : base
            let passed = e.request.type == .mtuUpRequest ? passedUp : passedDown
            if e.request.type == .mtuUpRequest { judged.up += 1 } else { judged.down += 1 }
            #expect(outcome.ok == passed.contains(e.request.size),
                    "\(run): \(e.request.type) \(e.request.size): \(outcome.failure?.phrase ?? "passed") \(outcome.detail ?? "")")
        }
        // The engine tries the largest upload first and keeps it when it passes: one or two upload
        // exchanges, then a download search of several.
        #expect(judged.up >= 1 && judged.down >= 3, "\(run): \(judged)")
        #expect(!passedUp.isEmpty && !passedDown.isEmpty)
    }

    /// With method 1 the engine's own upload probe carries the key in clear (bytes 16 to 47 of the
    /// decoded name are the key text); this codec's random padding shows only the 12 bytes every
    /// frame's fixed header shows.
    @Test func xorShowsTheKeyInTheEnginesProbesButNotInOurs() throws {
        let run = Self.engineModelRuns[0]
        let (probe, exchanges) = try Self.exchanges(run)
        let engineUp = try #require(exchanges.first { $0.request.type == .mtuUpRequest && $0.request.size >= 40 })
        let onWire = try LowerBase36.decode(engineUp.nameOnWire.prefixLabels(droppingSuffix: Self.zone)!.flatMap { $0 })
        #expect(Array(onWire[16..<48]) == Array(Self.key.utf8))

        let ours = try #require(probe.upload(size: engineUp.request.size, zone: Self.zone))
        let sealed = try LowerBase36.decode(ours.name.prefixLabels(droppingSuffix: Self.zone)!.flatMap { $0 })
        let keyBytes = Array(Self.key.utf8)
        let known = MasterDnsVPNFrame(sessionID: 255, type: .mtuUpRequest, payload: [0]).bytes.count  // header + mode byte
        var shown = 0
        for i in 0..<known where sealed[i] ^ keyBytes[i] == engineUp.frame.bytes[i] { shown += 1 }
        #expect(shown == 12)
        // Past the code, each byte is random: it equals the key's byte about once in 256.
        let matches = (16..<sealed.count).filter { sealed[$0] == keyBytes[$0 % 32] }.count
        #expect(matches < 4, "\(matches) padding bytes equal the key's")
    }

    /// The server's answers to a key it cannot use and to a domain it does not serve.
    @Test func wrongKeyAndWrongDomainAreNamed() throws {
        for (file, expected) in [("go-m5-wrongkey.pcap", ProbeFailure.noAnswer), ("go-m1-wrongdomain.pcap", .nxdomain)] {
            let url = Self.here.appendingPathComponent("Fixtures/mdv-server/\(file)")
            guard FileManager.default.fileExists(atPath: url.path) else { Issue.record("missing fixture \(file)"); continue }
            let answers = try Self.datagrams(url).filter { !$0.toResolver }.map { try DNSMessage(parsing: $0.dns) }
            #expect(!answers.isEmpty)
            for message in answers {
                let question = try #require(message.questions.first)
                let (response, outcome) = Prober.classify(.response(try message.serialized(), rttNanos: 1),
                                                          question: question)
                if expected == .nxdomain {
                    #expect(outcome.failure == .nxdomain)
                } else {
                    let probe = MasterDnsVPNMTUProbe(cipher: try MasterDnsVPNCipher(method: 5, keyText: Self.key))
                    let request = try #require(probe.upload(size: 20, zone: Self.zone))
                    let judged = MasterDnsVPNServerProber.judge(try #require(response), outcome, request: request, probe: probe)
                    #expect(judged.failure == .noAnswer)
                    #expect(judged.detail == MasterDnsVPNServerProber.noRecordsDetail)
                }
            }
        }
    }
}

/// Numbers right after `key` on each line of `text` that has it.
func numbers(after key: String, in text: String) -> [Int] {
    text.split(separator: "\n").compactMap { line in
        guard let r = line.range(of: key) else { return nil }
        return Int(line[r.upperBound...].prefix { $0.isNumber })
    }
}
