import EngineModels
import Testing

/// A resolver that passes names up to 253 characters and TXT responses up to `limit` bytes.
func pair(limit: Int, domain: String = "abcde.fghi", name: Int = 253, edns: Int? = nil) -> PairMeasurement {
    PairMeasurement(resolver: "192.0.2.2", domain: domain, longestName: name,
                    responses: [.txt: ResponseMeasurement(bytes: limit), .null: ResponseMeasurement(bytes: limit)],
                    upstreamEDNS: edns)
}

@Suite struct MasterDnsVPNGoTests {
    let model = MasterDnsVPNGoModel()

    // Measured with the real Go client next to unbound, 10-character domain, DATA_ENCRYPTION_METHOD 1
    // (shared/reference/dns-tunnels.md): upload 141; download 217 / 575 / 893 at 512 / 900 / 1232.
    @Test(arguments: [(512, 217), (900, 575), (1232, 893)])
    func reproducesMeasuredFigures(limit: Int, download: Int) {
        let f = model.figures(for: pair(limit: limit))
        #expect(f.upload.value == 141)
        #expect(f.upload.boundBy == .nameCapacity)
        #expect(f.download.value == download)
        #expect(f.download.boundBy == .responseSize)
        #expect(f.download.recordType == .txt)
    }

    /// The measured figures fill the resolver limit to the byte: one more byte overflows it.
    @Test func downloadFillsTheLimitExactly() {
        #expect(model.downloadResponseBytes(payload: 217, upload: 141, domainLength: 10) == 512)
        #expect(model.downloadResponseBytes(payload: 575, upload: 141, domainLength: 10) == 900)
        #expect(model.downloadResponseBytes(payload: 893, upload: 141, domainLength: 10) == 1232)
        #expect(model.downloadRdata(payload: 893) == [256, 256, 256, 145])
        #expect(model.uploadNameText(payload: 141, domainLength: 10) == 253)
        #expect(model.uploadNameText(payload: 142, domainLength: 10) == 255)
    }

    /// The encryption nonce and tag take name room: 16 bytes (ChaCha20) and 28 (AES-GCM)
    /// (internal/security/codec.go). A 12-character domain gives 139 / 123 / 111.
    @Test(arguments: [(EncryptionMethod.none, 10, 141), (.xor, 12, 139), (.chacha20, 12, 123), (.aes256GCM, 12, 111),
                      (.chacha20, 10, 125), (.aes128GCM, 10, 113)])
    func uploadPerEncryption(method: EncryptionMethod, domainLength: Int, upload: Int) {
        let domain = String(repeating: "a", count: domainLength - 2) + ".b"
        #expect(MasterDnsVPNGoModel(encryption: method).upload(for: pair(limit: 1232, domain: domain)).value == upload)
    }

    /// Answers are not encrypted, and the download query is padded to upload + header + nonce, which
    /// is the same name length for every method at its own upload MTU: downloads agree.
    @Test func downloadDoesNotDependOnEncryption() {
        for method in EncryptionMethod.allCases {
            #expect(MasterDnsVPNGoModel(encryption: method).figures(for: pair(limit: 1232)).download.value == 893)
        }
    }

    @Test func shortNamesBindUpload() {
        let f = model.figures(for: pair(limit: 1232, name: 200))
        #expect(f.upload.boundBy == .queryName)
        #expect(model.uploadNameText(payload: f.upload.value ?? 0, domainLength: 10) <= 200)
        #expect(model.uploadNameText(payload: (f.upload.value ?? 0) + 1, domainLength: 10) > 200)
        #expect(model.figures(for: pair(limit: 1232, name: 30)).upload.value == nil)
        #expect(model.figures(for: pair(limit: 1232, name: 30)).download.boundBy == .uploadUnusable)
    }

    @Test func base64AnswersCarryLess() {
        let b64 = MasterDnsVPNGoModel(baseEncodeData: true)
        let down = b64.figures(for: pair(limit: 1232)).download.value ?? 0
        #expect(down < 893)
        #expect(b64.downloadResponseBytes(payload: down, upload: 141, domainLength: 10) <= 1232)
        #expect(b64.downloadResponseBytes(payload: down + 1, upload: 141, domainLength: 10) > 1232)
        #expect(b64.downloadRdata(payload: 500).allSatisfy { $0 <= 256 })
    }

    @Test func limitsAndMissingMeasurements() {
        #expect(model.figures(for: pair(limit: 65_535)).download.boundBy == .engineMaximum)
        #expect(model.figures(for: pair(limit: 65_535)).download.value == 4096)
        #expect(model.figures(for: pair(limit: 100)).download.boundBy == .belowEngineMinimum)
        var p = pair(limit: 1232)
        p.responses = [:]
        #expect(model.figures(for: p).download.boundBy == .notMeasured)
        p.longestName = nil
        #expect(model.figures(for: p).upload.boundBy == .notMeasured)
        var lower = pair(limit: 1232)
        lower.responses[.txt] = ResponseMeasurement(bytes: 1232, isLowerBound: true)
        #expect(model.figures(for: lower).download.boundBy == .measurementCeiling)
    }
}

@Suite struct MasterDnsVPNPythonTests {
    let model = MasterDnsVPNPythonModel()

    // Same lab as the Go figures: upload 133; download 222 / 580 / 898.
    @Test(arguments: [(512, 222), (900, 580), (1232, 898)])
    func reproducesMeasuredFigures(limit: Int, download: Int) {
        let f = model.figures(for: pair(limit: limit))
        #expect(f.upload.value == 133)
        #expect(f.upload.boundBy == .engineNameBudget)
        #expect(f.download.value == download)
        #expect(f.download.boundBy == .responseSize)
    }

    /// The same sizes come out of the Python edition's own generate_labels and
    /// generate_vpn_response_packet: 512 / 900 / 1232 bytes, and 513 for 223.
    @Test func downloadFillsTheLimitExactly() {
        #expect(model.downloadResponseBytes(payload: 223, upload: 133, domainLength: 10) == 513)
        #expect(model.downloadResponseBytes(payload: 222, upload: 133, domainLength: 10) == 512)
        #expect(model.downloadResponseBytes(payload: 580, upload: 133, domainLength: 10) == 900)
        #expect(model.downloadResponseBytes(payload: 898, upload: 133, domainLength: 10) == 1232)
        #expect(model.downloadQueryText(upload: 133, domainLength: 10) == 235)
        #expect(model.uploadNameText(payload: 133, domainLength: 10) == 248)
    }

    /// The download probe carries its bytes' own base32 text, which at the cap can be a character
    /// shorter than the cap's budget: 12-character domain, 131 bytes = 210 characters, budget 211.
    /// The client's run through unbound showed the 234-character name (Fixtures/mdv-py-L700.pcap).
    @Test func downloadQueryCarriesTheDataNotTheBudget() {
        #expect(MasterDnsVPNPythonModel.uploadCap(domainLength: 12).chars == 211)
        #expect(model.downloadQueryChars(upload: 131, domainLength: 12) == 210)
        #expect(model.downloadQueryText(upload: 131, domainLength: 12) == 234)
        #expect(model.uploadNameText(payload: 131, domainLength: 12) == 248)
        #expect(model.downloadResponseBytes(payload: 395, upload: 131, domainLength: 12) == 700)
    }

    /// calculate_upload_mtu: (253 - 24 - (d + 1) - 1) * 63 / 64 characters, 5 bytes per 8 (values
    /// checked by calling the Python edition's own function).
    @Test(arguments: [(10, 133), (12, 131), (20, 126), (3, 137)])
    func uploadCapFollowsDomain(length: Int, bytes: Int) {
        #expect(MasterDnsVPNPythonModel.uploadCap(domainLength: length).bytes == bytes)
    }

    /// The header label is encrypted too: ChaCha20 lengthens it past the cap's reserve, so the name
    /// limit binds; AES-GCM makes it 64 characters, more than a label holds.
    @Test func encryptionChangesTheHeaderLabel() {
        let chacha = MasterDnsVPNPythonModel(encryption: .chacha20).figures(for: pair(limit: 1232))
        #expect(chacha.upload.boundBy == .nameCapacity)
        #expect((chacha.upload.value ?? 0) < 133)
        #expect(MasterDnsVPNPythonModel(encryption: .chacha20).uploadNameText(payload: chacha.upload.value ?? 0, domainLength: 10) <= 253)
        // Checked against the Python edition's own generate_labels: 120 -> 252 characters, 121 -> 254;
        // the download query's first fragment is 239 characters.
        #expect(chacha.upload.value == 120)
        #expect(MasterDnsVPNPythonModel(encryption: .chacha20).downloadQueryText(upload: 120, domainLength: 10) == 239)
        let aes = MasterDnsVPNPythonModel(encryption: .aes128GCM).figures(for: pair(limit: 1232))
        #expect(aes.upload.value == nil)
        #expect(aes.upload.boundBy == .engineUnsupported)
    }
}

@Suite struct MasterDnsVPNExportTests {
    @Test func exportsPinMinToMax() {
        let model = MasterDnsVPNGoModel()
        var other = pair(limit: 900)
        other.resolver = "[2001:db8::1]:5353"
        let synced = model.synced([pair(limit: 1232), other, pair(limit: 1232, name: 20)])
        #expect(synced.upload == 141)
        #expect(synced.download == 575)
        #expect(synced.usable.count == 2)
        #expect(synced.rejected.count == 1)
        let files = model.exports(synced)
        #expect(files.map(\.name) == ["client_resolvers.txt", "client_config.toml"])
        #expect(files[0].text.split(separator: "\n").dropFirst() == ["192.0.2.2", "[2001:db8::1]:5353"])
        let config = files[1].text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(config == ["MIN_UPLOAD_MTU = 141", "MAX_UPLOAD_MTU = 141", "MIN_DOWNLOAD_MTU = 575", "MAX_DOWNLOAD_MTU = 575"])
    }

    /// A pinned smaller upload shortens the download query and so leaves more room for download.
    @Test func syncedDownloadUsesSyncedUpload() {
        let model = MasterDnsVPNGoModel()
        let synced = model.synced([pair(limit: 1232), pair(limit: 1232, name: 150)])
        #expect((synced.upload ?? 0) < 141)
        #expect((synced.download ?? 0) > 893)
    }

    @Test func nothingUsable() {
        let synced = MasterDnsVPNGoModel().synced([pair(limit: 1232, name: 5)])
        #expect(synced.upload == nil && synced.download == nil)
        #expect(MasterDnsVPNGoModel().exports(synced)[1].text.contains("no usable resolver"))
    }
}
