public import Results
/// MasterDnsVPN, Go edition (masterking32/MasterDnsVPN, commit bc69a58).
///
/// Upload: the whole frame (an 11-byte header for the MTU probe and for stream data, then the
/// payload) is encrypted, written in lower-case base36 (7 bytes -> 11 characters), cut into 63-character
/// labels and put in front of the domain; the client's upload MTU is the largest payload whose name
/// stays within 253 characters (and within what the resolver passes). Download: the client asks
/// for an exact payload size with a query carrying as many bytes as its upload MTU; the server
/// answers in TXT, unencrypted, one record when the 11-byte header plus payload fit 255 bytes, else
/// several records (see `downloadRdata`). Both searches step by one byte, so the engine finds these
/// values exactly. Sources: see ``citation`` and docs/ENGINES.md.
public struct MasterDnsVPNGoModel: EngineModel {
    /// `DATA_ENCRYPTION_METHOD` in client_config.toml (must match the server).
    public var encryption: EncryptionMethod
    /// `BASE_ENCODE_DATA` in client_config.toml: the server base64-encodes TXT answers.
    public var baseEncodeData: Bool

    public init(encryption: EncryptionMethod = .xor, baseEncodeData: Bool = false) {
        self.encryption = encryption
        self.baseEncodeData = baseEncodeData
    }

    public var engine: Engine { .masterDnsVPNGo }

    public var citation: SourceCitation {
        SourceCitation(repository: "masterking32/MasterDnsVPN", commit: "bc69a58be67b8ff304908fdb9081a53f4a666be6", files: [
            "internal/client/mtu.go", "internal/vpnproto/builder.go", "internal/vpnproto/parser.go",
            "internal/security/codec.go", "internal/basecodec/lowerbase36.go", "internal/dnsparser/transport.go",
            "internal/udpserver/server.go", "internal/udpserver/server_session.go", "internal/client/client.go",
            "internal/config/client.go", "client_config.toml.simple", "client_resolvers.simple",
        ])
    }

    /// Header of the probe frames MTU_UP_REQ and MTU_DOWN_RES and of STREAM_DATA: session id, type,
    /// stream id (2), sequence (2), fragment id and count (2), compression, cookie, check byte
    /// (BuildRaw in internal/vpnproto/builder.go; the flags in buildPacketFlags of internal/vpnproto/parser.go).
    public static let frameHeader = 11
    /// Header of MTU_DOWN_REQ: session id, type, cookie, check byte (same files).
    public static let downRequestHeader = 4
    /// The download request's payload is at least flag + 4-byte code + 2-byte size (internal/client/mtu.go,
    /// sendDownloadMTUProbe: `max(1+mtuProbeCodeLength+2, uploadMTU)`).
    public static let downRequestMinimum = 7
    /// Upload search floor and cap (internal/client/mtu.go: minUploadMTUFloor, defaultUploadMaxCap).
    public static let uploadRange = 10...512
    /// Download search floor (SessionAcceptPayloadSize = 7 + 13, internal/vpnproto/session_accept.go)
    /// and the largest size the server answers (mtuProbeMaxDownSize, internal/udpserver/server.go).
    public static let downloadRange = 20...4096
    /// Largest raw chunk in one TXT record: 255 bytes, 191 when base64-encoded (maxTXTAnswerPayload,
    /// maxTXTEncodedChunk in internal/dnsparser/transport.go). The first chunk spends 2 bytes on a
    /// 0x00 marker and the chunk count and carries the header; later chunks spend 1 byte on their id.
    public var maxChunk: Int { baseEncodeData ? 191 : 255 }

    /// Text length of the upload probe's name for `payload` bytes under a domain of `d` characters.
    public func uploadNameText(payload: Int, domainLength d: Int) -> Int {
        let chars = WireArithmetic.base36Chars(encryption.overhead + Self.frameHeader + payload)
        return WireArithmetic.nameText(payloadChars: chars, labelSize: WireArithmetic.maxLabel, domainLength: d)
    }

    /// Text length of the download probe's name when the upload MTU is `upload`.
    public func downloadQueryText(upload: Int, domainLength d: Int) -> Int {
        let bytes = encryption.overhead + Self.downRequestHeader + max(Self.downRequestMinimum, upload)
        return WireArithmetic.nameText(payloadChars: WireArithmetic.base36Chars(bytes), labelSize: WireArithmetic.maxLabel,
                                       domainLength: d)
    }

    /// RDATA lengths of the TXT records answering a download probe for `payload` bytes
    /// (internal/dnsparser/transport.go: BuildVPNResponsePacket, buildTXTAnswerChunks).
    public func downloadRdata(payload: Int) -> [Int] {
        let base64 = baseEncodeData
        func encode(_ n: Int) -> Int { base64 ? WireArithmetic.rawBase64Chars(n) : n }
        let p = max(0, payload)
        let frame = Self.frameHeader + p
        if frame <= maxChunk { return [1 + encode(frame)] }
        let first = min(p, maxChunk - 2 - Self.frameHeader)
        var rdata = [1 + encode(2 + Self.frameHeader + first)]
        var left = p - first
        while left > 0 {
            let part = min(left, maxChunk - 1)
            rdata.append(1 + encode(1 + part))
            left -= part
        }
        return rdata
    }

    /// Size of the response message the client receives for a download probe of `payload` bytes.
    public func downloadResponseBytes(payload: Int, upload: Int, domainLength d: Int) -> Int {
        WireArithmetic.responseBytes(questionNameText: downloadQueryText(upload: upload, domainLength: d),
                                     rdataLengths: downloadRdata(payload: payload))
    }

    public func upload(for pair: PairMeasurement) -> DirectionFigure {
        let setting = "MIN_UPLOAD_MTU / MAX_UPLOAD_MTU"
        guard let measured = pair.longestName else { return DirectionFigure(value: nil, boundBy: .notMeasured, setting: setting) }
        let d = WireArithmetic.domainLength(pair.domain)
        let limit = min(max(0, measured), WireArithmetic.maxNameText)
        let full = WireArithmetic.largest(in: 1...Self.uploadRange.upperBound) {
            uploadNameText(payload: $0, domainLength: d) <= WireArithmetic.maxNameText
        }
        let value = WireArithmetic.largest(in: 1...Self.uploadRange.upperBound) { uploadNameText(payload: $0, domainLength: d) <= limit }
        guard let value, value >= Self.uploadRange.lowerBound else {
            return DirectionFigure(value: nil, boundBy: .belowEngineMinimum, setting: setting)
        }
        let bound: BindingLimit = value < (full ?? 0) ? .queryName
            : value == Self.uploadRange.upperBound ? .engineMaximum : .nameCapacity
        return DirectionFigure(value: value, boundBy: bound, payloadBytes: value, setting: setting)
    }

    public func download(for pair: PairMeasurement, upload: Int?) -> DirectionFigure {
        let setting = "MIN_DOWNLOAD_MTU / MAX_DOWNLOAD_MTU"
        guard let upload else { return DirectionFigure(value: nil, boundBy: .uploadUnusable, recordType: .txt, setting: setting) }
        guard let response = pair.responses[.txt] else {
            return DirectionFigure(value: nil, boundBy: .notMeasured, recordType: .txt, setting: setting)
        }
        let d = WireArithmetic.domainLength(pair.domain)
        let value = WireArithmetic.largest(in: Self.downloadRange) {
            downloadResponseBytes(payload: $0, upload: upload, domainLength: d) <= response.bytes
        }
        guard let value else { return DirectionFigure(value: nil, boundBy: .belowEngineMinimum, recordType: .txt, setting: setting) }
        let bound: BindingLimit = value == Self.downloadRange.upperBound ? .engineMaximum
            : response.isLowerBound ? .measurementCeiling : .responseSize
        return DirectionFigure(value: value, boundBy: bound, recordType: .txt, payloadBytes: value, setting: setting)
    }

    public func exports(_ synced: SyncedFigures) -> [ExportFile] {
        MasterDnsVPNExport.files(synced, edition: engine.displayName, encryption: encryption, baseEncodeData: baseEncodeData)
    }
}
