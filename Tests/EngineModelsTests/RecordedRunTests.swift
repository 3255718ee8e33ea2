import EngineModels
import Foundation
import Testing

// Runs of the real MasterDnsVPN clients (Go and Python editions) through Debian's unbound with
// `max-udp-size` 700 and 1100, limits no other test uses. Fixtures/RECORDING.md says how each file
// was recorded. The tests hold the models to what the engines did on the wire and in their logs.

/// One recorded run: the capture of its MTU test, its log lines and the pinned re-runs.
struct RecordedRun: Sendable, CustomStringConvertible {
    let edition: String
    let limit: Int
    var description: String { "mdv-\(edition)-L\(limit)" }
    static let domain = "vpn.lab.test"
    static let resolver = "198.18.10.2"

    static let all = [RecordedRun(edition: "go", limit: 700), RecordedRun(edition: "go", limit: 1100),
                      RecordedRun(edition: "py", limit: 700), RecordedRun(edition: "py", limit: 1100)]

    /// The pair as a scan measures it through this resolver: names up to 253 pass, TXT answers up to the limit.
    var pair: PairMeasurement {
        PairMeasurement(resolver: Self.resolver, domain: Self.domain, longestName: 253,
                        responses: [.txt: ResponseMeasurement(bytes: limit)])
    }

    var model: any EngineModel { edition == "go" ? MasterDnsVPNGoModel() : MasterDnsVPNPythonModel() }

    /// The model's name length of the upload probe for `payload` bytes.
    func uploadName(_ payload: Int) -> Int {
        let d = WireArithmetic.domainLength(Self.domain)
        return edition == "go" ? MasterDnsVPNGoModel().uploadNameText(payload: payload, domainLength: d)
            : MasterDnsVPNPythonModel().uploadNameText(payload: payload, domainLength: d)
    }

    /// The model's name length of the download probe at upload MTU `upload`.
    func downloadName(upload: Int) -> Int {
        let d = WireArithmetic.domainLength(Self.domain)
        return edition == "go" ? MasterDnsVPNGoModel().downloadQueryText(upload: upload, domainLength: d)
            : MasterDnsVPNPythonModel().downloadQueryText(upload: upload, domainLength: d)
    }

    /// The model's size of the response to a download probe for `payload` (as the client receives it).
    func responseBytes(payload: Int, upload: Int) -> Int? {
        let d = WireArithmetic.domainLength(Self.domain)
        return edition == "go" ? MasterDnsVPNGoModel().downloadResponseBytes(payload: payload, upload: upload, domainLength: d)
            : MasterDnsVPNPythonModel().downloadResponseBytes(payload: payload, upload: upload, domainLength: d)
    }

    /// The model's TXT RDATA lengths answering a download probe for `payload`.
    func rdata(payload: Int) -> [Int]? {
        edition == "go" ? MasterDnsVPNGoModel().downloadRdata(payload: payload)
            : MasterDnsVPNPythonModel().downloadRdata(payload: payload)
    }

    static func fixture(_ name: String) throws -> Data {
        let url = try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
        return try Data(contentsOf: url.appendingPathComponent(name))
    }

    func log() throws -> String { String(decoding: try Self.fixture("\(description).log"), as: UTF8.self) }
    func pinnedLog() throws -> String { String(decoding: try Self.fixture("\(description)-pinned.log"), as: UTF8.self) }
    func capture() throws -> [CapturedDNS] { try CapturedDNS.read(try Self.fixture("\(description).pcap")) }
}

/// One DNS message between the client and the resolver, as far as the tests need it.
struct CapturedDNS {
    var clientPort: UInt16
    var id: UInt16
    var isResponse: Bool
    var truncated: Bool
    /// Text length of the question name (with dots, without the trailing one).
    var nameText: Int
    /// The whole DNS message (the UDP payload).
    var size: Int
    /// RDATA lengths of the TXT answers.
    var txtRdata: [Int]
    /// True when every answer's owner name is one 2-byte compression pointer.
    var ownersCompressed: Bool
    /// Sizes of the OPT records in the additional section.
    var optSizes: [Int]

    enum Failure: Error { case format(String) }

    /// Minimal reader for the fixtures: classic little-endian pcap, Ethernet, IPv4, UDP. It reads the
    /// DNS wire itself, not through DNSWire, because what it checks is how the resolver laid the
    /// bytes out (owner names as 2-byte pointers, the OPT record's own size), which DNSWire's parser
    /// rightly hides by decompressing names.
    static func read(_ data: Data) throws -> [CapturedDNS] {
        let b = [UInt8](data)
        func u16(_ i: Int) -> Int { Int(b[i]) << 8 | Int(b[i + 1]) }
        func le32(_ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 | Int(b[i + 3]) << 24 }
        guard b.count >= 24, le32(0) == 0xa1b2_c3d4, le32(20) == 1 else { throw Failure.format("not a little-endian Ethernet pcap") }
        var out: [CapturedDNS] = []
        var at = 24
        while at + 16 <= b.count {
            let caplen = le32(at + 8)
            let frame = at + 16
            at = frame + caplen
            guard at <= b.count, caplen > 42, u16(frame + 12) == 0x0800, b[frame + 23] == 17 else {
                throw Failure.format("record at \(frame) is not IPv4/UDP")
            }
            let ip = frame + 14
            let udp = ip + Int(b[ip] & 0x0f) * 4
            let (sport, dport, udpLength) = (u16(udp), u16(udp + 2), u16(udp + 4))
            let m = udp + 8, end = udp + udpLength
            guard end <= at else { throw Failure.format("record at \(frame) was cut short") }
            // Reads a name at `i`; returns its text length (nil for a pointer-only name) and the next offset.
            func name(_ start: Int) throws -> (text: Int?, next: Int) {
                var i = start, text = 0, labels = 0
                while true {
                    guard i < end else { throw Failure.format("name runs past the message") }
                    let len = Int(b[i])
                    if len == 0 { return (labels == 0 ? 0 : text + labels - 1, i + 1) }
                    if len & 0xc0 == 0xc0 { return (i == start ? nil : text + labels, i + 2) }
                    text += len
                    labels += 1
                    i += len + 1
                }
            }
            let flags = u16(m + 2)
            let (qd, an, ns, ar) = (u16(m + 4), u16(m + 6), u16(m + 8), u16(m + 10))
            guard qd == 1 else { throw Failure.format("question count \(qd)") }
            let q = try name(m + 12)
            var i = q.next + 4
            var rdata: [Int] = [], compressed = true, opts: [Int] = []
            for n in 0..<(an + ns + ar) {
                let owner = try name(i)
                let type = u16(owner.next), rdlength = u16(owner.next + 8)
                let next = owner.next + 10 + rdlength
                if n < an {
                    if owner.next - i != 2 || owner.text != nil { compressed = false }
                    if type == 16 { rdata.append(rdlength) }
                } else if n >= an + ns, type == 41 {
                    opts.append(next - i)
                }
                i = next
            }
            guard i == end else { throw Failure.format("message at \(frame) has \(end - i) trailing bytes") }
            let isResponse = flags & 0x8000 != 0
            out.append(CapturedDNS(clientPort: UInt16(isResponse ? dport : sport), id: UInt16(u16(m)), isResponse: isResponse,
                                   truncated: flags & 0x0200 != 0, nameText: q.text ?? 0, size: end - m, txtRdata: rdata,
                                   ownersCompressed: compressed, optSizes: opts))
        }
        return out
    }
}

/// Numbers after `key` in each line of `text` that contains `key` (e.g. "Max Upload MTU found: ").
func numbers(after key: String, in text: String) -> [Int] {
    text.split(separator: "\n").compactMap { line in
        guard let r = line.range(of: key) else { return nil }
        return Int(line[r.upperBound...].prefix { $0.isNumber })
    }
}

@Suite struct RecordedRunTests {
    /// The engine's own result line equals the model's figures for a pair through this resolver,
    /// and the synced values the client settles on equal the model's synced figures.
    @Test(arguments: RecordedRun.all)
    func modelEqualsLoggedFigures(run: RecordedRun) throws {
        let log = try run.log()
        let up = try #require(numbers(after: "Max Upload MTU found: ", in: log).first)
        let down = try #require(numbers(after: "Max Download MTU found: ", in: log).first)
        let figures = run.model.figures(for: run.pair)
        #expect(figures.upload.value == up)
        #expect(figures.download.value == down)
        let synced = run.model.synced([run.pair])
        #expect(numbers(after: "Selected Synced Upload MTU: ", in: log) == [synced.upload].compactMap { $0 })
        #expect(numbers(after: "Selected Synced Download MTU: ", in: log) == [synced.download].compactMap { $0 })
    }

    /// Every download size the client tried passed exactly when the model's response for it fits the limit.
    @Test(arguments: RecordedRun.all)
    func everyDownloadProbeOutcomeFollowsTheModel(run: RecordedRun) throws {
        let log = try run.log()
        let up = try #require(numbers(after: "Max Upload MTU found: ", in: log).first)
        let passed = numbers(after: "Download test passed: Download MTU ", in: log)
        let failed = numbers(after: "Download test failed: Download MTU ", in: log)
        #expect(passed.count >= 2 && failed.count >= 2)
        for size in passed { #expect((run.responseBytes(payload: size, upload: up) ?? .max) <= run.limit, "passed \(size)") }
        for size in failed { #expect((run.responseBytes(payload: size, upload: up) ?? .max) > run.limit, "failed \(size)") }
    }

    /// On the wire: the upload probe's name, the download probe's name, and each answered download
    /// probe's size and TXT layout are the model's, in the order the client tried them; the largest
    /// answer fills the limit to the byte.
    @Test(arguments: RecordedRun.all)
    func captureMatchesTheModelByteForByte(run: RecordedRun) throws {
        let log = try run.log()
        let up = try #require(numbers(after: "Max Upload MTU found: ", in: log).first)
        let down = try #require(numbers(after: "Max Download MTU found: ", in: log).first)
        let packets = try run.capture()
        let queries = packets.filter { !$0.isResponse }
        let answered = packets.filter { $0.isResponse && !$0.truncated && !$0.txtRdata.isEmpty }
        #expect(!queries.isEmpty && !answered.isEmpty)

        // The longest answered name is the upload probe at the logged upload MTU.
        #expect(answered.map(\.nameText).max() == run.uploadName(up))
        #expect(run.uploadName(up) <= WireArithmetic.maxNameText)

        // Download probes: answered ones in the logged order of passing sizes.
        let probeName = run.downloadName(upload: up)
        let downAnswers = answered.filter { $0.nameText == probeName }
        let passed = numbers(after: "Download test passed: Download MTU ", in: log)
        #expect(downAnswers.map(\.size) == passed.map { run.responseBytes(payload: $0, upload: up) ?? -1 })
        // unbound hands the records of an RRset out in rotated order (rrset-roundrobin), so compare them as sets.
        #expect(downAnswers.map { $0.txtRdata.sorted() } == passed.map { (run.rdata(payload: $0) ?? []).sorted() })
        #expect(answered.map(\.size).max() == run.limit)
        #expect(run.responseBytes(payload: down, upload: up) == run.limit)
        #expect((run.responseBytes(payload: down + 1, upload: up) ?? .max) > run.limit)

        // What the resolver sends: owner names as pointers and its own 11-byte OPT; a refused size
        // comes back truncated and empty (header, question, OPT).
        for p in packets where p.isResponse {
            #expect(p.ownersCompressed)
            #expect(p.optSizes == [WireArithmetic.optRecord])
        }
        let truncated = packets.filter { $0.isResponse && $0.truncated }
        #expect(!truncated.isEmpty)
        for p in truncated {
            #expect(p.txtRdata.isEmpty)
            #expect(p.size == WireArithmetic.responseBytes(questionNameText: p.nameText, rdataLengths: []))
        }
    }

    /// MIN = MAX pinned to the model's exported values: the client accepts the resolver; one byte
    /// more download is refused. One byte more upload is refused by the Go client (its name cap)
    /// and clamped back to the same value by the Python client (calculate_upload_mtu).
    @Test(arguments: RecordedRun.all)
    func pinnedRunsAcceptTheExportAndNothingMore(run: RecordedRun) throws {
        let sections = try run.pinnedLog().components(separatedBy: "## run ").dropFirst()
        let runs = Dictionary(uniqueKeysWithValues: sections.map { s in (String(s.prefix { $0 != ":" }), s) })
        let synced = run.model.synced([run.pair])
        let up = try #require(synced.upload), down = try #require(synced.download)
        let export = try #require(run.model.exports(synced).first { $0.name == "client_config.toml" })
        let ok = try #require(runs["ok"])
        for key in ["MIN_UPLOAD_MTU", "MAX_UPLOAD_MTU", "MIN_DOWNLOAD_MTU", "MAX_DOWNLOAD_MTU"] {
            let used = numbers(after: "\(key) = ", in: String(ok.prefix { $0 != "\n" }))
            #expect(used == numbers(after: "\(key) = ", in: export.text), "\(key)")
        }
        #expect(numbers(after: "| upload=", in: ok) == [up])
        #expect(numbers(after: "| download=", in: ok) == [down])
        #expect(!ok.contains("Rejected ("))

        let downOne = try #require(runs["down1"])
        #expect(downOne.contains("reason=DOWNLOAD_MTU"))
        #expect(numbers(after: "Download test failed: Download MTU ", in: downOne) == [down + 1])
        #expect(!downOne.contains("Accepted ("))

        let upOne = try #require(runs["up1"])
        #expect(numbers(after: "MIN_UPLOAD_MTU = ", in: upOne).first == up + 1)
        if run.edition == "go" {
            #expect(upOne.contains("reason=UPLOAD_MTU"))
            #expect(!upOne.contains("Accepted ("))
        } else {
            #expect(upOne.contains("Range: \(up)-\(up)"))
            #expect(numbers(after: "| upload=", in: upOne) == [up])
        }
    }
}

/// dnstt (upstream e5e873b) through the same unbound: `-mtu L` and `-mtu L+1` with a 100 kB upload
/// and a 200 kB download at once, so that full-length queries meet full answers.
@Suite struct RecordedDnsttTests {
    static let domainLength = WireArithmetic.domainLength(RecordedRun.domain)

    static func files(limit: Int, mtu: Int) throws -> (log: String, packets: [CapturedDNS]) {
        let name = "dnstt-L\(limit)-mtu\(mtu)"
        return (String(decoding: try RecordedRun.fixture("\(name).log"), as: UTF8.self),
                try CapturedDNS.read(try RecordedRun.fixture("\(name).pcap")))
    }

    /// At the model's `-mtu` (the resolver's limit): both ends log the model's KCP MTUs, the data
    /// arrives, nothing is truncated, and answers to full-length queries fill the limit to the byte.
    @Test(arguments: [700, 1100])
    func modelMtuFillsTheLimit(limit: Int) throws {
        let pair = RecordedRun(edition: "go", limit: limit).pair
        let figures = DnsttModel().figures(for: pair)
        let mtu = try #require(figures.download.value)
        #expect(mtu == limit)
        let (log, packets) = try Self.files(limit: limit, mtu: mtu)
        #expect(numbers(after: "effective MTU ", in: log) == [DnsttModel.downloadMTU(limit: mtu), DnsttModel.uploadMTU(domainLength: Self.domainLength)])
        #expect(figures.upload.value == DnsttModel.uploadMTU(domainLength: Self.domainLength))
        #expect(log.contains("downloaded 200000 of 200000"))

        let fullName = DnsttModel.uploadNameText(mtu: DnsttModel.uploadMTU(domainLength: Self.domainLength), domainLength: Self.domainLength)
        #expect(packets.filter { !$0.isResponse }.map(\.nameText).max() == fullName)
        let responses = packets.filter(\.isResponse)
        #expect(!responses.isEmpty)
        #expect(responses.allSatisfy { !$0.truncated && $0.size <= limit && $0.ownersCompressed && $0.optSizes == [WireArithmetic.optRecord] })
        let full = responses.filter { $0.size == limit }
        #expect(!full.isEmpty)
        let rdata = WireArithmetic.txtRdata(DnsttModel.maxEncodedPayload(limit: mtu))
        for p in full {
            #expect(p.nameText == fullName)
            #expect(p.txtRdata == [rdata])
        }
        #expect(WireArithmetic.responseBytes(questionNameText: fullName, rdataLengths: [rdata]) == limit)
    }

    /// One byte more: a full answer to a full-length query would be limit + 1 bytes, and unbound
    /// returns those truncated and empty (the data still arrives through KCP's retransmissions).
    @Test(arguments: [700, 1100])
    func oneByteMoreIsTruncated(limit: Int) throws {
        let (log, packets) = try Self.files(limit: limit, mtu: limit + 1)
        #expect(numbers(after: "effective MTU ", in: log).first == DnsttModel.downloadMTU(limit: limit + 1))
        let fullName = DnsttModel.uploadNameText(mtu: DnsttModel.uploadMTU(domainLength: Self.domainLength), domainLength: Self.domainLength)
        let rdata = WireArithmetic.txtRdata(DnsttModel.maxEncodedPayload(limit: limit + 1))
        #expect(WireArithmetic.responseBytes(questionNameText: fullName, rdataLengths: [rdata]) == limit + 1)
        let truncated = packets.filter { $0.isResponse && $0.truncated }
        #expect(!truncated.isEmpty)
        for p in truncated {
            #expect(p.nameText == fullName)
            #expect(p.txtRdata.isEmpty)
            #expect(p.size == WireArithmetic.responseBytes(questionNameText: p.nameText, rdataLengths: []))
        }
    }
}
