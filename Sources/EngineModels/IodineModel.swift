public import Results
/// iodine 0.7 (yarrick/iodine tag v0.7.0, commit 392b8e2), the version Debian ships.
///
/// Upload is `-M`, the longest hostname iodine builds (10...255): data is encoded with the upstream
/// codec, cut into 57-character labels after a 5-character header, then the topdomain. Download is
/// `-m`, the downstream fragment size: iodine's autoprobe asks the server for answers of growing
/// size in a name as long as `-M` allows, keeps the largest that arrives whole and uses two bytes
/// less (each data fragment carries a 2-byte header). The autoprobe is a binary search that stops
/// at a step of 12 bytes (`autoprobe`), so it can settle up to 11 bytes below what `-m` can be set
/// to. The model covers NULL and PRIVATE answers (raw bytes) and TXT (with `-O`); CNAME, MX, SRV
/// and A carry names and are not modelled. Sources: see ``citation`` and docs/ENGINES.md.
public struct IodineModel: EngineModel {
    /// How many bits one hostname character carries for the upstream codec (src/base32.c,
    /// src/base64.c, src/base128.c).
    public enum UpstreamCodec: Int, Sendable, Hashable, Codable, CaseIterable {
        case base32 = 5
        case base64 = 6
        case base128 = 7
    }

    /// Downstream encoding of TXT answers (`-O`; src/iodined.c write_dns).
    public enum DownstreamEncoding: String, Sendable, Hashable, Codable, CaseIterable {
        case base32, base64, base128, raw

        /// Characters for `bytes` bytes of fragment.
        func chars(_ bytes: Int) -> Int {
            switch self {
            case .base32: WireArithmetic.bitPackedChars(bytes, bitsPerChar: 5)
            case .base64: WireArithmetic.bitPackedChars(bytes, bitsPerChar: 6)
            case .base128: WireArithmetic.bitPackedChars(bytes, bitsPerChar: 7)
            case .raw: max(0, bytes)
            }
        }
    }

    /// `-T`: NULL (iodine's first choice), PRIVATE or TXT.
    public var queryType: RecordType
    /// The codec of upstream names when the fragment size is probed (base32 until the codec switch).
    public var upstreamCodec: UpstreamCodec
    /// `-O` for TXT answers (iodine picks raw when base128 works, else base64, else base32).
    public var txtEncoding: DownstreamEncoding

    public init(queryType: RecordType = .null, upstreamCodec: UpstreamCodec = .base32, txtEncoding: DownstreamEncoding = .raw) {
        self.queryType = queryType
        self.upstreamCodec = upstreamCodec
        self.txtEncoding = txtEncoding
    }

    public var engine: Engine { .iodine }

    public var downloadRecordType: RecordType { queryType }

    public var citation: SourceCitation {
        SourceCitation(repository: "yarrick/iodine", commit: "392b8e2be7f64e99d9cb7131d4020daca07b9a1a", files: [
            "src/client.c", "src/iodine.c", "src/iodined.c", "src/encoding.c", "src/base32.c", "src/dns.c", "src/read.c", "man/iodine.8",
        ])
    }

    /// `-M` range (src/iodine.c option parsing clamps to 10...255).
    public static let hostnameRange = 10...255
    /// Fragment sizes the probe can ask for: 11 bits, the server refuses below 2 (src/client.c
    /// send_fragsize_probe, src/iodined.c).
    public static let probeRange = 2...2047
    /// Each downstream data fragment spends 2 bytes on its header (src/client.c, "data header adds 2 bytes").
    public static let fragmentHeader = 2
    /// build_hostname reserves 8 characters: a 5-character header, the dot before the topdomain and
    /// 2 spare (src/encoding.c); a dot follows every 57 data characters.
    public static let hostnameReserve = 8
    public static let headerChars = 5
    public static let labelSize = 57
    /// TXT answers are cut into strings of at most 252 bytes (src/read.c puttxtbin).
    public static let txtStringSize = 252

    /// Data characters one query name carries with `-M maxLength` under a topdomain of `d`
    /// characters (dots not counted; src/encoding.c build_hostname).
    public static func dataSpace(maxLength: Int, domainLength d: Int) -> Int {
        max(0, min(max(maxLength, hostnameRange.lowerBound), hostnameRange.upperBound) - max(0, d) - hostnameReserve)
    }

    /// True when a query's data can run over more than one label (a dot after every 57 characters).
    public static func spansSeveralLabels(maxLength: Int, domainLength d: Int) -> Bool {
        let space = dataSpace(maxLength: maxLength, domainLength: d)
        return space - space / labelSize > labelSize - 1
    }

    /// The largest `-M` whose queries keep all their data in one label under a topdomain of `d`
    /// characters: what a resolver that minimises QNAMEs (RFC 9156) needs, since it sends the last
    /// label alone first and iodined cannot decode a part of its data.
    public static func oneLabelHostnameLimit(domainLength d: Int) -> Int {
        max(0, d) + hostnameReserve + labelSize - 1
    }

    /// Text length of the fragment-size probe's name with `-M maxLength` under a topdomain of `d`
    /// characters: the encoder fills the room with whole characters only.
    public func probeNameText(maxLength: Int, domainLength d: Int) -> Int {
        let room = maxLength - max(0, d) - Self.hostnameReserve
        guard room > 0 else { return Self.headerChars + 1 + max(0, d) }
        let space = room - room / Self.labelSize
        let bits = upstreamCodec.rawValue
        let chars = WireArithmetic.bitPackedChars(space * bits / 8, bitsPerChar: bits)
        guard chars > 0 else { return Self.headerChars + 1 + max(0, d) }
        return Self.headerChars + WireArithmetic.nameText(payloadChars: chars, labelSize: Self.labelSize, domainLength: d)
    }

    /// RDATA of the answer to a probe for `fragment` bytes.
    public func probeRdata(_ fragment: Int) -> Int {
        switch queryType {
        case .txt: WireArithmetic.txtRdata(1 + txtEncoding.chars(fragment), stringSize: Self.txtStringSize)
        default: max(0, fragment)
        }
    }

    /// The largest fragment iodine's autoprobe (src/client.c handshake_autoprobe_fragsize) accepts
    /// when every size up to `limit` arrives whole: it starts at 768, halves its step from 768 each
    /// round, and stops once the step is below 8 and it has found 300 or more. 0: none.
    public static func autoprobe(limit: Int) -> Int {
        var proposed = 768, step = 768, best = 0
        while step > 0 && (step >= 8 || best < 300) {
            if probeRange.contains(proposed) && proposed <= limit { best = proposed }
            step >>= 1
            proposed += best == proposed ? step : -step
        }
        return best > 2 ? best : 0
    }

    public func upload(for pair: PairMeasurement) -> DirectionFigure {
        let setting = "-M"
        guard let measured = pair.longestName else { return DirectionFigure(value: nil, boundBy: .notMeasured, setting: setting) }
        let d = WireArithmetic.domainLength(pair.domain)
        let limit = min(max(0, measured), WireArithmetic.maxNameText)
        guard let value = WireArithmetic.largest(in: Self.hostnameRange, where: { probeNameText(maxLength: $0, domainLength: d) <= limit })
        else { return DirectionFigure(value: nil, boundBy: .belowEngineMinimum, setting: setting) }
        let bound: BindingLimit = value == Self.hostnameRange.upperBound ? .engineMaximum : .queryName
        return DirectionFigure(value: value, boundBy: bound, setting: setting)
    }

    public func download(for pair: PairMeasurement, upload: Int?) -> DirectionFigure {
        let setting = "-m"
        let type = queryType == .txt ? RecordType.txt : queryType
        guard let upload else { return DirectionFigure(value: nil, boundBy: .uploadUnusable, recordType: type, setting: setting) }
        guard let response = pair.responses[type] else {
            return DirectionFigure(value: nil, boundBy: .notMeasured, recordType: type, setting: setting)
        }
        let text = probeNameText(maxLength: upload, domainLength: WireArithmetic.domainLength(pair.domain))
        let largest = WireArithmetic.largest(in: Self.probeRange) {
            WireArithmetic.responseBytes(questionNameText: text, rdataLengths: [probeRdata($0)]) <= response.bytes
        }
        guard let largest, largest > Self.fragmentHeader else {
            return DirectionFigure(value: nil, boundBy: .belowEngineMinimum, recordType: type, setting: setting)
        }
        let probed = Self.autoprobe(limit: largest)
        let bound: BindingLimit = largest == Self.probeRange.upperBound ? .engineMaximum
            : response.isLowerBound ? .measurementCeiling : .responseSize
        return DirectionFigure(value: largest - Self.fragmentHeader, boundBy: bound, recordType: type,
                               engineSearchValue: probed > 0 ? probed - Self.fragmentHeader : nil,
                               payloadBytes: largest - Self.fragmentHeader, setting: setting)
    }

    /// One `iodine` argument line per usable resolver, with the synced `-M` and that resolver's `-m`.
    /// iodine 0.7 talks to port 53 only, so other ports are listed as comments.
    public func exports(_ synced: SyncedFigures) -> [ExportFile] {
        var lines = ["# iodine: add -P PASSWORD (or IODINE_PASS) and the topdomain; one resolver per run"]
        let type = queryType == .txt ? "TXT -O \(txtEncoding.rawValue)" : queryType.rawValue
        for pair in synced.usable {
            guard let m = synced.upload, let fragment = pair.download.value, let address = ResolverAddress(pair.resolver) else { continue }
            if let note = address.udpOnlyNote(engine: "iodine") {
                lines.append(note)
                continue
            }
            let prefix = address.port == ResolverAddress.defaultPort ? "" : "# port \(address.port) unsupported by iodine 0.7: "
            lines.append("\(prefix)-M \(m) -m \(fragment) -T \(type) \(address.host)")
        }
        return [ExportFile(name: "iodine.args", text: lines.joined(separator: "\n") + "\n")]
    }
}
