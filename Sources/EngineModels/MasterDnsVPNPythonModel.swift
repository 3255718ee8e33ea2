public import Results
/// MasterDnsVPN, Python edition (masterking32/MasterDnsVPN at 012b7d3, the parent of cbdf406 that
/// moved it to python_edition/).
///
/// Upload: the payload travels as base32 text (8 characters per 5 bytes) in 63-character labels,
/// followed by one label holding the encrypted, base32-encoded header, then the domain. The client
/// does not search the name limit: it derives a cap from the domain length by formula
/// (`uploadCap`), reserving room for the largest header, and searches only up to it. Download: as
/// in the Go edition, but headers are 12 bytes, the probe asks for one byte more than the size it
/// tests, and the download query carries the upload MTU's bytes as base32 text. Both searches step by one
/// byte. Sources: see ``citation`` and docs/ENGINES.md.
public struct MasterDnsVPNPythonModel: EngineModel {
    /// `DATA_ENCRYPTION_METHOD` in client_config.toml.
    public var encryption: EncryptionMethod
    /// `BASE_ENCODE_DATA` in client_config.toml: the server base64-encodes TXT answers.
    public var baseEncodeData: Bool

    public init(encryption: EncryptionMethod = .xor, baseEncodeData: Bool = false) {
        self.encryption = encryption
        self.baseEncodeData = baseEncodeData
    }

    public var engine: Engine { .masterDnsVPNPython }

    public var citation: SourceCitation {
        SourceCitation(repository: "masterking32/MasterDnsVPN", commit: "012b7d37b5b52beb6a4d9f19cfb912ed0bff989c", files: [
            "client.py", "server.py", "dns_utils/DnsPacketParser.py", "client_config.toml.simple", "client_resolvers.simple.txt",
        ])
    }

    /// Largest header (STREAM_DATA: session, type, stream 2, sequence 2, fragment 4, compression,
    /// cookie, check byte), which the upload cap reserves (DnsPacketParser.get_vpn_header_raw_size).
    public static let maxHeader = 13
    /// MTU_UP_REQ and MTU_DOWN_RES headers (no compression byte).
    public static let probeHeader = 12
    /// MTU_DOWN_REQ header: session, type, cookie, check byte.
    public static let downRequestHeader = 4
    /// The download request carries at least a flag and a 4-byte size (client.py send_download_mtu_test).
    public static let downRequestMinimum = 5
    /// Both searches start at 30 (client.py _binary_search_mtu min_threshold) and upload stops at 512.
    public static let searchFloor = 30
    public static let uploadCeiling = 512
    /// The upload probe fails below 29 payload characters (client.py send_upload_mtu_test).
    public static let minUploadChars = 29
    /// The server gives up on answers of more than 255 chunks (generate_vpn_response_packet).
    public static let maxChunks = 255
    /// Largest raw chunk per TXT record: 255 bytes, 189 when base64-encoded with padding.
    public var maxChunk: Int { baseEncodeData ? 189 : 255 }

    /// The client's own upload cap for a domain of `d` characters, in payload bytes and characters
    /// (DnsPacketParser.calculate_upload_mtu): 253 less the base32 length of the largest header plus
    /// one marker byte, plus one, less the domain and two dots; 63 of every 64 characters carry data.
    public static func uploadCap(domainLength d: Int) -> (bytes: Int, chars: Int) {
        let header = WireArithmetic.base32Chars(maxHeader + 1) + 1
        let room = WireArithmetic.maxNameText - header - (max(0, d) + 1) - 1
        guard room > 0 else { return (0, 0) }
        let chars = room * WireArithmetic.maxLabel / (WireArithmetic.maxLabel + 1)
        return (chars * 5 / 8, chars)
    }

    /// Payload characters the client sends for `bytes` bytes (calculate_upload_mtu with mtu > 0).
    static func payloadChars(_ bytes: Int, domainLength d: Int) -> Int {
        let cap = uploadCap(domainLength: d)
        return bytes < cap.bytes ? WireArithmetic.base32Chars(bytes) : cap.chars
    }

    /// Characters of the header label of a frame whose raw header has `header` bytes.
    public func headerLabel(_ header: Int) -> Int { WireArithmetic.base32Chars(header + encryption.overhead) }

    /// Whether the client can build its queries with this method at all: the probe header's label
    /// must fit 63 characters (AES-GCM makes it 40 bytes, 64 characters, and the client's
    /// DnsPacketParser gives up with "Label too long": every MTU probe fails; recorded in
    /// Tests/TunnelVerifyTests/Fixtures/masterdnsvpn-python).
    public var buildsItsQueries: Bool { headerLabel(Self.probeHeader) <= WireArithmetic.maxLabel }

    /// Text length of the upload probe's name for `payload` bytes.
    public func uploadNameText(payload: Int, domainLength d: Int) -> Int {
        WireArithmetic.nameText(payloadChars: Self.payloadChars(payload, domainLength: d), labelSize: WireArithmetic.maxLabel,
                                extraLabels: [headerLabel(Self.probeHeader)], domainLength: d)
    }

    /// Characters of the download probe's payload when the upload MTU is `upload`: the request's
    /// max(5, upload) bytes, encrypted and base32-encoded, cut to the upload MTU's character budget
    /// (client.py send_download_mtu_test passes calculate_upload_mtu's characters as the fragment
    /// size; only the first fragment is sent). The budget binds only when encryption lengthens the
    /// data: at the cap the budget can be a character longer than the data's own base32 text (a
    /// 12-character domain: 211 characters of budget, 210 for 131 bytes), and the query is the
    /// shorter of the two (measured through unbound, Tests/EngineModelsTests/Fixtures).
    public func downloadQueryChars(upload: Int, domainLength d: Int) -> Int {
        let bytes = max(Self.downRequestMinimum, upload)
        return min(WireArithmetic.base32Chars(bytes + encryption.overhead), Self.payloadChars(bytes, domainLength: d))
    }

    /// Text length of the download probe's name when the upload MTU is `upload`.
    public func downloadQueryText(upload: Int, domainLength d: Int) -> Int {
        WireArithmetic.nameText(payloadChars: downloadQueryChars(upload: upload, domainLength: d),
                                labelSize: WireArithmetic.maxLabel, extraLabels: [headerLabel(Self.downRequestHeader)],
                                domainLength: d)
    }

    /// Bytes the client asks for when it tests `payload`: one more, the gap between the largest
    /// header and the probe's (client.py send_download_mtu_test, header_reserve).
    public static func requestedBytes(_ payload: Int) -> Int { payload + maxHeader - probeHeader }

    /// RDATA lengths of the TXT records answering a download probe for `payload`
    /// (DnsPacketParser.generate_vpn_response_packet); nil past 255 chunks.
    public func downloadRdata(payload: Int) -> [Int]? {
        let base64 = baseEncodeData
        func encode(_ n: Int) -> Int { base64 ? WireArithmetic.paddedBase64Chars(n) : n }
        let data = Self.requestedBytes(max(0, payload))
        if Self.probeHeader + data <= maxChunk { return [1 + encode(Self.probeHeader + data)] }
        let first = maxChunk - 2 - Self.probeHeader
        var rdata = [1 + encode(2 + Self.probeHeader + first)]
        var left = data - first
        while left > 0 {
            let part = min(left, maxChunk - 1)
            rdata.append(1 + encode(1 + part))
            left -= part
            if rdata.count > Self.maxChunks { return nil }
        }
        return rdata
    }

    /// Size of the response message the client receives for a download probe of `payload` bytes.
    public func downloadResponseBytes(payload: Int, upload: Int, domainLength d: Int) -> Int? {
        downloadRdata(payload: payload).map {
            WireArithmetic.responseBytes(questionNameText: downloadQueryText(upload: upload, domainLength: d), rdataLengths: $0)
        }
    }

    public func upload(for pair: PairMeasurement) -> DirectionFigure {
        let setting = "MIN_UPLOAD_MTU / MAX_UPLOAD_MTU"
        guard let measured = pair.longestName else { return DirectionFigure(value: nil, boundBy: .notMeasured, setting: setting) }
        guard buildsItsQueries else {
            return DirectionFigure(value: nil, boundBy: .engineUnsupported, setting: setting)
        }
        let d = WireArithmetic.domainLength(pair.domain)
        let cap = min(Self.uploadCap(domainLength: d).bytes, Self.uploadCeiling)
        guard cap >= Self.searchFloor else { return DirectionFigure(value: nil, boundBy: .belowEngineMinimum, setting: setting) }
        func fits(_ limit: Int) -> (Int) -> Bool {
            { m in
                Self.payloadChars(m, domainLength: d) >= Self.minUploadChars && uploadNameText(payload: m, domainLength: d) <= limit
            }
        }
        let limit = min(max(0, measured), WireArithmetic.maxNameText)
        let full = WireArithmetic.largest(in: Self.searchFloor...cap, where: fits(WireArithmetic.maxNameText))
        guard let value = WireArithmetic.largest(in: Self.searchFloor...cap, where: fits(limit)) else {
            return DirectionFigure(value: nil, boundBy: .belowEngineMinimum, setting: setting)
        }
        let bound: BindingLimit = value < (full ?? 0) ? .queryName
            : value == Self.uploadCeiling ? .engineMaximum
            : value == Self.uploadCap(domainLength: d).bytes ? .engineNameBudget : .nameCapacity
        return DirectionFigure(value: value, boundBy: bound, payloadBytes: value, setting: setting)
    }

    public func download(for pair: PairMeasurement, upload: Int?) -> DirectionFigure {
        let setting = "MIN_DOWNLOAD_MTU / MAX_DOWNLOAD_MTU"
        guard let upload else { return DirectionFigure(value: nil, boundBy: .uploadUnusable, recordType: .txt, setting: setting) }
        guard let response = pair.responses[.txt] else {
            return DirectionFigure(value: nil, boundBy: .notMeasured, recordType: .txt, setting: setting)
        }
        let d = WireArithmetic.domainLength(pair.domain)
        let top = WireArithmetic.largest(in: Self.searchFloor...65_535) { downloadRdata(payload: $0) != nil } ?? Self.searchFloor
        let value = WireArithmetic.largest(in: Self.searchFloor...top) {
            (downloadResponseBytes(payload: $0, upload: upload, domainLength: d) ?? .max) <= response.bytes
        }
        guard let value else { return DirectionFigure(value: nil, boundBy: .belowEngineMinimum, recordType: .txt, setting: setting) }
        let bound: BindingLimit = value == top ? .engineMaximum : response.isLowerBound ? .measurementCeiling : .responseSize
        return DirectionFigure(value: value, boundBy: bound, recordType: .txt, payloadBytes: value, setting: setting)
    }

    public func exports(_ synced: SyncedFigures) -> [ExportFile] {
        MasterDnsVPNExport.files(synced, edition: engine.displayName, encryption: encryption, baseEncodeData: baseEncodeData)
    }
}
