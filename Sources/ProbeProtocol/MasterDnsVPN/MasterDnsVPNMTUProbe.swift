public import DNSWire
import Foundation

/// The MTU-test requests a MasterDnsVPN client (Go edition, commit bc69a58) sends before it has a
/// session, and the judging of the server's replies, so that a scan can measure a resolver against
/// the user's own MasterDnsVPN server in the engine's units (internal/client/mtu.go
/// sendUploadMTUProbe, sendDownloadMTUProbe, buildMTUProbeQuery, buildMTUProbePayload;
/// internal/udpserver/server_session.go handleMTUUpRequest, handleMTUDownRequest).
///
/// Upload: an MTU_UP_REQ whose payload is U bytes (a reply-mode byte, a 4-byte code, padding); the
/// server answers MTU_UP_RES with the code and the payload length it received. Download: an
/// MTU_DOWN_REQ padded to the pair's upload MTU (as the engine pads it) asking for D bytes; the
/// server answers MTU_DOWN_RES with D bytes that start with the code and D. Every query is the
/// frame encrypted with the user's method and key, in lower-case base 36, in 63-character labels in
/// front of the domain, TXT with EDNS 4096.
///
/// The replies carry no MAC: they are not encrypted and their check byte is a checksum. What makes
/// an answer the server's is that it echoes the 4-byte code, which with methods 2 to 5 travels
/// encrypted (a forger must guess it: 1 in 2^32) and with methods 0 and 1 can be read on the path.
/// Unlike the engine, which pads with zeros (so that with XOR its MTU probes carry the key itself),
/// the padding here is random: a probe shows no more of the key than any frame's known header does.
public struct MasterDnsVPNMTUProbe: Sendable {
    public let cipher: MasterDnsVPNCipher
    /// `BASE_ENCODE_DATA`: ask the server for base64 TXT answers (reply mode 1) instead of raw (0).
    public let base64Replies: Bool

    /// The session id of pre-session requests, and the stream/sequence/fragment fields the engine sets.
    static let sessionID: UInt8 = 255
    /// Reply mode byte, 4-byte code, and (download) the 2-byte size asked for.
    public static let uploadMinimum = 5
    public static let downloadRequestMinimum = 7
    /// The engine's search floors and the server's bounds (internal/client/mtu.go minUploadMTUFloor,
    /// defaultUploadMaxCap; internal/udpserver/server.go mtuProbeMinDownSize, mtuProbeMaxDownSize).
    public static let uploadRange = 10...512
    public static let downloadRange = 20...4096

    public init(cipher: MasterDnsVPNCipher, base64Replies: Bool = false) {
        self.cipher = cipher
        self.base64Replies = base64Replies
    }

    /// A request ready to send: the question and what its reply must echo.
    public struct Request: Sendable {
        public let name: DNSName
        public let code: UInt32
        public let type: MasterDnsVPNFrame.PacketType
        /// U for an upload request, D for a download request.
        public let size: Int
        /// Text length of the name (the engine's "upload chars").
        public var nameText: Int { name.textLength }
    }

    /// The upload request for `size` payload bytes; nil when its name would not fit 253 characters.
    public func upload(size: Int, zone: DNSName, code: UInt32 = .random(in: 0...UInt32.max),
                       padding: [UInt8]? = nil, nonce: [UInt8]? = nil) -> Request? {
        guard size >= Self.uploadMinimum else { return nil }
        var frame = MasterDnsVPNFrame(sessionID: Self.sessionID, type: .mtuUpRequest,
                                      payload: meta(code: code) + (padding ?? Self.randomBytes(size - Self.uploadMinimum)))
        frame.streamID = 1
        frame.sequence = 1
        frame.fragmentCount = 1
        guard frame.payload.count == size, let name = name(for: frame, zone: zone, nonce: nonce) else { return nil }
        return Request(name: name, code: code, type: .mtuUpRequest, size: size)
    }

    /// The download request for `size` bytes, padded to `uploadMTU` bytes as the engine pads it.
    public func download(size: Int, uploadMTU: Int, zone: DNSName, code: UInt32 = .random(in: 0...UInt32.max),
                         padding: [UInt8]? = nil, nonce: [UInt8]? = nil) -> Request? {
        guard Self.downloadRange.contains(size) else { return nil }
        let length = max(Self.downloadRequestMinimum, uploadMTU)
        let head = meta(code: code) + [UInt8(size >> 8), UInt8(truncatingIfNeeded: size)]
        let frame = MasterDnsVPNFrame(sessionID: Self.sessionID, type: .mtuDownRequest,
                                      payload: head + (padding ?? Self.randomBytes(length - head.count)))
        guard frame.payload.count == length, let name = name(for: frame, zone: zone, nonce: nonce) else { return nil }
        return Request(name: name, code: code, type: .mtuDownRequest, size: size)
    }

    /// Reads a request back from its name (what the server does first): the labels in front of
    /// `zone` joined, decoded, opened and parsed; nil for a name that is not one of this key's MTU
    /// requests. `sealedPrefix` is the sealed frame's nonce (methods 2 to 5), to rebuild it exactly.
    public func parseRequest(name: DNSName, zone: DNSName) -> (request: Request, frame: MasterDnsVPNFrame, nonce: [UInt8])? {
        guard let labels = name.lowercased().prefixLabels(droppingSuffix: zone.lowercased()), !labels.isEmpty,
              let sealed = try? LowerBase36.decode(labels.flatMap { $0 }),
              let plain = try? cipher.open(sealed),
              let frame = try? MasterDnsVPNFrame(parsing: plain), frame.payload.count >= Self.uploadMinimum else { return nil }
        let p = frame.payload
        let code = UInt32(p[1]) << 24 | UInt32(p[2]) << 16 | UInt32(p[3]) << 8 | UInt32(p[4])
        let nonce = Array(sealed.prefix(cipher.method == 2 ? 16 : cipher.method >= 3 ? 12 : 0))
        switch frame.type {
        case .mtuUpRequest:
            return (Request(name: name, code: code, type: .mtuUpRequest, size: p.count), frame, nonce)
        case .mtuDownRequest where p.count >= Self.downloadRequestMinimum:
            return (Request(name: name, code: code, type: .mtuDownRequest, size: Int(p[5]) << 8 | Int(p[6])), frame, nonce)
        default:
            return nil
        }
    }

    func meta(code: UInt32) -> [UInt8] {
        [base64Replies ? 1 : 0, UInt8(code >> 24), UInt8(truncatingIfNeeded: code >> 16),
         UInt8(truncatingIfNeeded: code >> 8), UInt8(truncatingIfNeeded: code)]
    }

    /// The frame sealed, in base 36, cut into 63-character labels in front of the zone
    /// (internal/dnsparser/transport.go BuildTunnelTXTQuestionPacketPrepared).
    func name(for frame: MasterDnsVPNFrame, zone: DNSName, nonce: [UInt8]?) -> DNSName? {
        let text = LowerBase36.encode(cipher.seal(frame.bytes, nonce: nonce))
        guard !text.isEmpty else { return nil }
        var labels: [[UInt8]] = stride(from: 0, to: text.count, by: 63).map { Array(text[$0..<min($0 + 63, text.count)]) }
        labels += zone.labels
        guard let name = try? DNSName(labels: labels), name.textLength <= 253 else { return nil }
        return name
    }

    /// The largest upload size whose request fits under `zone` (the engine's maxUploadMTUPayload).
    public func uploadCapacity(zone: DNSName) -> Int {
        var best = 0
        for size in Self.uploadMinimum...Self.uploadRange.upperBound {
            let chars = LowerBase36.encodedLength(cipher.overhead + 11 + size)
            let text = chars + (chars + 62) / 63 + zone.textLength
            if text <= 253 { best = size } else { break }
        }
        return best
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<max(0, count)).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

    /// What a reply said, judged against its request.
    public enum Verdict: Equatable, Sendable {
        case passed
        /// Not a reply of the server to this request: another type, another code, bad framing.
        case foreign(String)
        /// The server's reply, but the size it received (upload) or sent (download) differs.
        case wrongSize(String)
    }

    /// Judges the TXT answer records of a reply (each record's strings joined, in answer order).
    public func judge(records: [[UInt8]], for request: Request) -> Verdict {
        let frame: MasterDnsVPNFrame
        do { frame = try Self.assemble(records, base64: base64Replies) } catch { return .foreign("\(error)") }
        let code = meta(code: request.code)[1...]
        switch request.type {
        case .mtuUpRequest:
            guard frame.type == .mtuUpReply, frame.payload.count == 6 else {
                return .foreign("a \(frame.type) frame of \(frame.payload.count) bytes, not an upload reply")
            }
            guard frame.payload[0..<4].elementsEqual(code) else { return .foreign("the reply does not echo the probe's code") }
            let received = Int(frame.payload[4]) << 8 | Int(frame.payload[5])
            return received == request.size ? .passed : .wrongSize("the server received \(received) of \(request.size) bytes")
        case .mtuDownRequest:
            guard frame.type == .mtuDownReply, frame.compression == 0, frame.payload.count >= 6 else {
                return .foreign("a \(frame.type) frame of \(frame.payload.count) bytes, not a download reply")
            }
            guard frame.payload[0..<4].elementsEqual(code) else { return .foreign("the reply does not echo the probe's code") }
            let said = Int(frame.payload[4]) << 8 | Int(frame.payload[5])
            guard said == request.size else { return .wrongSize("the reply says \(said) bytes, \(request.size) were asked") }
            return frame.payload.count == request.size ? .passed
                : .wrongSize("\(frame.payload.count) of \(request.size) bytes arrived")
        default:
            return .foreign("not a request")
        }
    }

    public enum AssemblyError: Error, Equatable, Sendable {
        case noRecords
        case frame(MasterDnsVPNFrame.ParseError)
        case base64
        /// Chunked answer: a missing first chunk, a chunk count that does not match, a duplicate.
        case chunks(String)
    }

    /// The frame in a reply's TXT records: one record holds the whole frame; several hold chunks, the
    /// first marked 0x00 with the chunk count before the frame's header, each later one led by its
    /// index (internal/dnsparser/transport.go buildTXTAnswerChunks, assembleVPNResponse).
    public static func assemble(_ records: [[UInt8]], base64: Bool) throws(AssemblyError) -> MasterDnsVPNFrame {
        var raws: [[UInt8]] = []
        for record in records where !record.isEmpty {
            if base64 {
                guard let decoded = rawBase64Decode(record) else { throw .base64 }
                raws.append(decoded)
            } else {
                raws.append(record)
            }
        }
        guard !raws.isEmpty else { throw .noRecords }
        if raws.count == 1 {
            do { return try MasterDnsVPNFrame(parsing: raws[0]) } catch { throw .frame(error) }
        }
        var chunks: [Int: [UInt8]] = [:]
        var expected = 0
        var head: MasterDnsVPNFrame?
        for raw in raws {
            if raw[0] == 0 {
                guard raw.count >= 3, head == nil else { throw .chunks("a first chunk that is short or repeated") }
                expected = Int(raw[1])
                do { head = try MasterDnsVPNFrame(parsing: raw[2...]) } catch { throw .frame(error) }
                chunks[0] = head?.payload
            } else {
                guard chunks[Int(raw[0])] == nil else { throw .chunks("chunk \(raw[0]) twice") }
                chunks[Int(raw[0])] = Array(raw[1...])
            }
        }
        guard var frame = head, expected > 0, chunks.count == expected,
              (0..<expected).allSatisfy({ chunks[$0] != nil }) else {
            throw .chunks("\(chunks.count) chunks, the first says \(expected)")
        }
        frame.payload = (0..<expected).flatMap { chunks[$0] ?? [] }
        return frame
    }

    /// Base64 of the standard alphabet without padding (Go's base64.RawStdEncoding).
    static func rawBase64Decode(_ text: [UInt8]) -> [UInt8]? {
        guard text.count % 4 != 1, let s = String(bytes: text, encoding: .ascii) else { return nil }
        let padded = s + String(repeating: "=", count: (4 - s.count % 4) % 4)
        return Data(base64Encoded: padded).map { Array($0) }
    }
}

extension MasterDnsVPNMTUProbe {
    /// What anyone on the path (every resolver the query crosses) can read from these requests, by
    /// encryption method. The header of an upload request is fixed (session 255, type 1, stream 1,
    /// sequence 1, fragment 0 of 1, no compression, cookie 0, check byte) and so is the reply-mode
    /// byte after it: 12 bytes of known plaintext in every request, and the same header in every
    /// frame the engine itself sends.
    public var wireExposure: String {
        switch cipher.method {
        case 0:
            return "method 0 (none): every request is readable by every resolver on the path, code included; a resolver could forge replies, so the honest-answer stage proves little against a hostile resolver"
        case 1:
            return "method 1 (XOR): the key text repeats over each frame from its first byte, and the 12 known header bytes of every request show the key's first 12 characters to every resolver on the path (any frame the engine sends does the same); tunnelprobe pads with random bytes, so its requests show nothing more, while the engine's own MTU probes pad with zeros and show the whole key (docs/ENGINES.md). The 4-byte code is readable too, so a resolver could forge replies"
        case 2:
            return "method 2 (ChaCha20, no MAC): nothing of the key or the code is readable; the server cannot tell altered requests, but an altered code does not come back, so a forged reply fails"
        default:
            return "method \(cipher.method) (AES-GCM): nothing of the key or the code is readable, and the server rejects altered requests"
        }
    }

    /// Why the replies are believed, and how far.
    public static let authentication =
        "MasterDnsVPN's MTU replies carry no MAC: they are not encrypted and their check byte is a checksum. A reply counts as the server's when it is a well-formed MTU reply that echoes the request's random 4-byte code and size; with methods 2 to 5 the code travels encrypted, so a resolver must guess it (1 in 2^32)"

    /// The length of the key text the server keeps for `method`: 16 characters for AES-128-GCM, 24 for
    /// AES-192-GCM, 32 otherwise; a key file of any other length it replaces with a random key at start
    /// (internal/security/encryption_key.go EnsureServerEncryptionKey, requiredKeyLength).
    public static func serverKeyLength(method: Int) -> Int {
        switch method {
        case 3: 16
        case 4: 24
        default: 32
        }
    }

    /// The names `--encryption-method` takes, by method number.
    public static let methodNames = ["none", "xor", "chacha20", "aes-128-gcm", "aes-192-gcm", "aes-256-gcm"]
}
