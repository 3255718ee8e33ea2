import Base
public import DNSWire
public import ProbeProtocol

/// What the DNS leak check needs to use the responder's leak zone: its domain and the key.
public struct LeakZoneAccess: Sendable {
    public var zone: DNSName
    public var key: ProbeKey

    public init(zone: DNSName, key: ProbeKey) {
        self.zone = zone
        self.key = key
    }

    func markName(nonce: [UInt8]) -> String? {
        guard let name = try? ProbeName.build(meta: LeakProbe.mark(nonce: nonce), zone: zone, key: key) else { return nil }
        return name.description
    }

    /// Asks the responder, through `server`, who asked for each mark; the union of the askers.
    func fetch(marks: [[UInt8]], server: String, namespacePath: String, generator: inout SplitMix64) async -> [String]? {
        var queries: [[UInt8]] = []
        var nonces: [UInt16: [UInt8]] = [:]
        var system = SystemRandomNumberGenerator()
        for mark in marks {
            let nonce = (0..<8).map { _ in UInt8.random(in: 0...255, using: &system) }
            guard let name = try? ProbeName.build(meta: LeakProbe.report(nonce: nonce, about: mark), zone: zone, key: key) else { continue }
            let id = UInt16(truncatingIfNeeded: generator.next())
            nonces[id] = nonce
            if let query = DNSQuery.make(id: id, name: name.description, type: 16) { queries.append(query) }
        }
        let responses = await SandboxProbes.dnsQueries(queries, server: server, namespacePath: namespacePath, wait: .milliseconds(1500))
        guard !responses.isEmpty else { return nil }
        var seen: [String] = []
        for (id, bytes) in responses {
            guard let nonce = nonces[id], let message = try? DNSMessage(parsing: bytes) else { continue }
            for answer in message.answers {
                guard case .txt(let strings) = answer.rdata,
                      let report = try? LeakProbe.openReport(strings.flatMap { $0 }, nonce: nonce, key: key) else { continue }
                for source in report.sources where !seen.contains(source) { seen.append(source) }
            }
        }
        return seen.sorted()
    }
}
