import ProbeClient
import Reports
import Testing
import Results

@Suite struct SyncedMTUTests {
    func pair(_ i: Int, up: Int, down: Int, accepted: Bool = true) -> ScanPair {
        ScanPair(resolver: "198.51.100.\(i):53", domain: "vpn.lab.test", accepted: accepted,
                 upload: .init(bytes: up, qnameChars: 200 + up % 50, payloadChars: 0, encoding: "base32", limitedBy: nil, caseChanged: false),
                 download: .init(bytes: down, responseSize: down + 300, recordType: "TXT", limitedBy: nil))
    }

    @Test func syncedIsTheMinimumOverAcceptedPairs() {
        let s = SyncedMTU.synced([pair(1, up: 140, down: 900), pair(2, up: 120, down: 1100), pair(3, up: 10, down: 10, accepted: false)])
        #expect(s.upload == 120 && s.download == 900 && s.downloadResponseSize == 1200)
    }

    @Test func optimizerDropsOnlyLowOutliersWorthDropping() throws {
        let pairs = (1...8).map { pair($0, up: 140, down: 1100) } + [pair(9, up: 140, down: 300)]
        let o = try #require(SyncedMTU.optimize(pairs))
        #expect(o.download == 1100 && o.dropped == ["198.51.100.9:53 vpn.lab.test"])
        // Nothing gained: no proposal.
        #expect(SyncedMTU.optimize((1...8).map { pair($0, up: 140, down: 1100) }) == nil)
        // Too many outliers (over a quarter of the pairs): no proposal.
        let many = (1...4).map { pair($0, up: 140, down: 1100) } + (5...8).map { pair($0, up: 140, down: 300) }
        #expect(SyncedMTU.optimize(many) == nil)
    }
}
