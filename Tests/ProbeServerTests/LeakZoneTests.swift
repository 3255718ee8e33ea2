import DNSWire
import ProbeProtocol
import ProbeServer
import Testing

struct LeakZoneTests {
    func txt(_ response: [UInt8]?) throws -> [UInt8] {
        let message = try DNSMessage(parsing: try #require(response))
        guard case .txt(let strings) = try #require(message.answers.first).rdata else { Issue.record("no TXT"); return [] }
        return strings.flatMap { $0 }
    }

    @Test func marksAreRecordedPerAskerAndReportedSealed() throws {
        let leaks = LeakZone(capacity: 8)
        let responder = ProbeResponder(configuration: .init(zone: zone, key: key, leakZone: leaks))
        let mark: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        let markName = try ProbeName.build(meta: LeakProbe.mark(nonce: mark), zone: zone, key: key)
        #expect(responder.respond(to: try query(markName, .a), source: [198, 18, 1, 1]).disposition == .leak)
        _ = responder.respond(to: try query(markName, .a), source: [198, 18, 2, 2])
        _ = responder.respond(to: try query(markName, .a), source: [198, 18, 2, 2])

        let reportNonce: [UInt8] = [9, 9, 9, 9, 9, 9, 9, 9]
        let reportName = try ProbeName.build(meta: LeakProbe.report(nonce: reportNonce, about: mark), zone: zone, key: key)
        let outcome = responder.respond(to: try query(reportName), source: [198, 18, 1, 1])
        #expect(outcome.disposition == .leak)
        let opened = try LeakProbe.openReport(try txt(outcome.response), nonce: reportNonce, key: key)
        #expect(opened.sources == ["198.18.1.1", "198.18.2.2"])
        #expect(opened.total == 3)
        // A report is not a mark: it left no record of its own.
        #expect(leaks.sources(nonce: reportNonce).total == 0)

        // Another key (a forger) cannot make a report that opens.
        let other = try ProbeKey(bytes: Array(100..<132))
        let forged = LeakProbe.sealReport(sources: [], total: 0, nonce: reportNonce, key: other)
        #expect(throws: ProbeError.self) { try LeakProbe.openReport(forged, nonce: reportNonce, key: key) }
        #expect(throws: ProbeError.self) { try LeakProbe.openReport([1, 2, 3], nonce: reportNonce, key: key) }
    }

    @Test func theTableIsBounded() {
        let leaks = LeakZone(capacity: 2)
        for i in 0..<3 { leaks.record(nonce: [UInt8](repeating: UInt8(i), count: 8), source: [192, 0, 2, UInt8(i)]) }
        #expect(leaks.sources(nonce: [UInt8](repeating: 0, count: 8)).total == 0)
        #expect(leaks.sources(nonce: [UInt8](repeating: 2, count: 8)).sources == [[192, 0, 2, 2]])
    }

    @Test func withoutALeakZoneMarksAreRefused() throws {
        let name = try ProbeName.build(meta: LeakProbe.mark(nonce: [1, 1, 1, 1, 1, 1, 1, 1]), zone: zone, key: key)
        #expect(responder.respond(to: try query(name), source: [192, 0, 2, 1]).disposition == .refused)
    }
}
