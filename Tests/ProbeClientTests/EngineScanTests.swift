import EngineModels
import ProbeClient
import Testing
import Results

/// From what a scan measured to each engine's units: the pair's name length and per-type response
/// sizes reach the models, only usable pairs count, and the synced values are the engines' own.
@Suite struct EngineScanTests {
    /// A pair as `scan` reports it under the 10-character domain of docs/ENGINES.md's recorded runs
    /// (t.lab.test), with a resolver that truncates answers above `limit` bytes.
    func pair(_ i: Int, limit: Int, qname: Int = 253, lossy: Bool = false, null: Int? = nil) -> ScanPair {
        var p = ScanPair(resolver: "198.51.100.\(i):53", domain: "t.lab.test", accepted: true,
                         upload: .init(bytes: 140, qnameChars: qname, payloadChars: qname - 11, encoding: "base32",
                                       limitedBy: nil, caseChanged: false),
                         download: .init(bytes: limit - 300, responseSize: limit, recordType: "TXT", limitedBy: .resolverLimit))
        if let null {
            p.downloads = [p.download!, .init(bytes: null - 280, responseSize: null, recordType: "NULL", limitedBy: .resolverLimit)]
        }
        p.lossExceeded = lossy
        return p
    }

    @Test func measurementCarriesNameLengthAndEveryType() throws {
        let m = pair(1, limit: 900, null: 880).measurement
        #expect(m.longestName == 253 && m.domain == "t.lab.test")
        #expect(m.responses[.txt] == ResponseMeasurement(bytes: 900, isLowerBound: false))
        #expect(m.responses[.null] == ResponseMeasurement(bytes: 880, isLowerBound: false))
        // The largest size tried passed: what the resolver carries is at least that.
        var open = pair(2, limit: 1232)
        open.download?.limitedBy = nil
        #expect(open.measurement.responses[.txt]?.isLowerBound == true)
    }

    /// The MasterDnsVPN Go client's own figures through unbound at 512, 900 and 1232 bytes
    /// (docs/ENGINES.md: upload 141, download 217 / 575 / 893) come out of the scan's pairs.
    @Test(arguments: [(512, 217), (900, 575), (1232, 893)])
    func masterDnsVPNGoFiguresFromScanPairs(limit: Int, download: Int) throws {
        let scan = try #require(EngineScan.all([.masterDnsVPNGo], pairs: [pair(1, limit: limit)]).first)
        #expect(scan.synced.upload == 141 && scan.synced.download == download)
        #expect(scan.source.repository == "masterking32/MasterDnsVPN")
        let config = try #require(scan.exports.first { $0.name == "client_config.toml" })
        #expect(config.text.contains("MAX_UPLOAD_MTU = 141") && config.text.contains("MIN_DOWNLOAD_MTU = \(download)"))
    }

    @Test func syncedTakesTheMinimumAndSkipsLossyPairs() throws {
        let pairs = [pair(1, limit: 1232), pair(2, limit: 900), pair(3, limit: 512, lossy: true)]
        let scan = try #require(EngineScan.all([.masterDnsVPNGo], pairs: pairs).first)
        #expect(scan.synced.download == 575)
        #expect(scan.synced.usable.map(\.resolver) == ["198.51.100.1:53", "198.51.100.2:53"])
        let resolvers = try #require(scan.exports.first { $0.name == "client_resolvers.txt" })
        #expect(!resolvers.text.contains("198.51.100.3"))
    }

    /// iodine answers in NULL: without a NULL measurement its download is not measured, with one it is.
    @Test func iodineReadsTheNullMeasurement() throws {
        let without = try #require(EngineScan.all([.iodine], pairs: [pair(1, limit: 1232)]).first)
        #expect(without.synced.usable.isEmpty && without.synced.rejected.first?.download.boundBy == .notMeasured)
        let with = try #require(EngineScan.all([.iodine], pairs: [pair(1, limit: 1232, null: 1232)]).first)
        #expect(with.synced.download != nil && with.synced.upload != nil)
    }

    @Test func shortNamesBindUpload() throws {
        let scan = try #require(EngineScan.all([.masterDnsVPNGo], pairs: [pair(1, limit: 1232, qname: 200)]).first)
        let figure = try #require(scan.synced.usable.first?.upload)
        #expect(figure.boundBy == .queryName && (figure.value ?? 0) < 141)
    }
}
