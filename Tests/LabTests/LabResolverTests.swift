import Foundation
@testable import Lab
import Testing
import TestSupport

/// What the lab's unbound does to answers on their way to the client, measured with a stand-in
/// responder that answers `<n>.<name>` TXT with exactly n bytes.
@Suite(.serialized, .enabled(if: LabGate.lab.runs, "\(LabGate.lab.missing ?? "lab tests can run")"))
struct LabResolverTests {
    /// `max-udp-size` is the knob: answers up to the limit pass whole, one byte more comes back
    /// empty with TC set (RFC 1035 section 4.2.1 for the 512-byte case).
    @Test(.timeLimit(.minutes(2)), arguments: [512, 777, 1232])
    func theUDPLimitTruncatesExactlyAboveItself(limit: Int) async throws {
        try LabGate.lab.check()
        try await LabFixture.withLab(LabFixture.config(udpLimit: limit)) { status in
            #expect(status.resolverUDPLimit == limit)
            let responder = try StandInResponder(lab: status.name)
            defer { responder.stop() }
            for (size, truncated) in [(limit - 1, false), (limit, false), (limit + 1, true), (limit + 500, true)] {
                for address in ["198.18.0.1", "198.18.4.77"] {
                    let reply = try await sizedQuery(status, address: address, size: size)
                    #expect(reply.truncated == truncated, "limit \(limit), \(size) bytes via \(address): \(reply.size) bytes")
                    if !truncated { #expect(reply.size == size && reply.answerCount == 1) }
                    if truncated { #expect(reply.answerCount == 0 && reply.size < 100) }
                }
            }
        }
    }

    /// Without a limit unbound 1.17 passes answers up to 4096 bytes (its max-udp-size default)
    /// to a client that offers 4096.
    @Test(.timeLimit(.minutes(1)))
    func withoutALimitLargeAnswersPass() async throws {
        try LabGate.lab.check()
        try await LabFixture.withLab(LabFixture.config()) { status in
            #expect(status.resolverUDPLimit == nil)
            let responder = try StandInResponder(lab: status.name)
            defer { responder.stop() }
            for size in [1233, 4000, 4096] {
                let reply = try await sizedQuery(status, address: "198.18.0.1", size: size)
                #expect(!reply.truncated && reply.size == size)
            }
            #expect(try await sizedQuery(status, address: "198.18.0.1", size: 4097).truncated)
            // A client without EDNS still gets at most 512 bytes.
            let plain = try await sizedQuery(status, address: "198.18.0.1", size: 600, edns: nil)
            #expect(plain.truncated)
        }
    }

    /// The resolver options reach unbound: 0x20 mixes the case of upstream names, and qname
    /// minimisation (on by default) first asks for a name one label below the zone.
    @Test(.timeLimit(.minutes(2)), arguments: [(false, true), (true, false)])
    func resolverOptionsReachUnbound(capsForID: Bool, minimisation: Bool) async throws {
        try LabGate.lab.check()
        let config = LabFixture.config(capsForID: capsForID, qnameMinimisation: minimisation)
        try await LabFixture.withLab(config) { status in
            let responder = try StandInResponder(lab: status.name)
            defer { responder.stop() }
            let leaf = "abcdefghijklmnopqrstuvwxyz"
            let name = "100.\(leaf).\(UUID().uuidString.prefix(8).lowercased()).\(status.domain)."
            let reply = try await Lab.query(name: status.name, server: "198.18.0.1", qname: name, qtype: 16)
            #expect(reply.responseCode == 0 && reply.size == 100, "\(reply)")
            let seen = responder.questions
            let full = seen.filter { $0.lowercased() + "." == name }
            #expect(!full.isEmpty, "the responder saw \(seen)")
            #expect(full.contains { $0 != $0.lowercased() } == capsForID, "upstream names: \(full)")
            let shorter = seen.contains { name.hasSuffix($0.lowercased() + ".") && $0.lowercased() + "." != name }
            #expect(shorter == minimisation, "upstream names: \(seen)")
        }
    }

    private func sizedQuery(_ status: LabStatus, address: String, size: Int, edns: Int? = 4096) async throws -> LabDNSReply {
        // A new name every time: unbound caches answers.
        let name = "\(size).\(UUID().uuidString.prefix(8).lowercased()).\(status.domain)."
        return try await Lab.query(name: status.name, server: address, qname: name, qtype: 16, ednsPayloadSize: edns)
    }
}
