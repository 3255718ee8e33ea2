public import Results
/// dnstt (www.bamsoftware.com/git/dnstt.git, upstream commit e5e873b, read from the
/// tladesignz/dnstt mirror).
///
/// Upload is not a setting: the client derives its KCP MTU from the domain (`uploadMTU`) and
/// every full packet becomes a name of `uploadNameText` characters, so a resolver must pass that
/// name or the pair is unusable. Download is the server's `-mtu` flag, the largest DNS response it
/// sends; the server refuses (FORMERR) queries whose resolver advertises a smaller EDNS size, so
/// `-mtu` may not exceed the resolver's upstream EDNS size either. One server serves every
/// resolver, so the synced `-mtu` is the minimum. Sources: see ``citation`` and docs/ENGINES.md.
public struct DnsttModel: EngineModel {
    public init() {}

    public var engine: Engine { .dnstt }

    public var citation: SourceCitation {
        SourceCitation(repository: "tladesignz/dnstt (mirror of www.bamsoftware.com/git/dnstt.git)",
                       commit: "e5e873bd64d9e3edefb8978175572730494f89a8",
                       files: ["dnstt-client/main.go", "dnstt-client/dns.go", "dnstt-server/main.go", "dns/dns.go",
                               "man/dnstt-client.1", "man/dnstt-server.1"])
    }

    /// Per query: 8-byte client id, a padding-length byte, 3 bytes of padding, a data-length byte
    /// (dnstt-client/dns.go: numPadding; the sum is subtracted in dnstt-client/main.go run).
    public static let queryOverhead = 8 + 1 + 3 + 1
    /// Neither side accepts an MTU below 80 (dnstt-client/main.go run, dnstt-server/main.go run).
    public static let minimumMTU = 80
    /// Each downstream packet in a response carries a 2-byte length (dnstt-server/main.go sendLoop).
    public static let packetLengthPrefix = 2
    /// The server sizes responses for the worst case, a question name of 255 octets on the wire
    /// (dnstt-server/main.go computeMaxEncodedPayload).
    public static let worstQuestionNameText = WireArithmetic.maxNameText
    /// Requesters advertising less than 512 count as 512 (RFC 6891 6.2.5; dnstt-server/main.go responseFor).
    public static let minimumEDNS = 512
    /// `-mtu` is a UDP payload size; the server clamps the EDNS class it compares to 16 bits.
    public static let maximumMTU = 65_535

    /// The client's KCP MTU for a domain of `d` characters (dnstt-client/main.go dnsNameCapacity):
    /// 255 octets less the root and the domain's labels, 63 of every 64 octets as data, 5 bytes per
    /// 8 base32 characters, less the per-query overhead.
    public static func uploadMTU(domainLength d: Int) -> Int {
        let octets = 255 - 1 - (max(0, d) + 1)
        return octets * 63 / 64 * 5 / 8 - queryOverhead
    }

    /// Text length of the name carrying a full upstream packet of `mtu` bytes.
    public static func uploadNameText(mtu: Int, domainLength d: Int) -> Int {
        WireArithmetic.nameText(payloadChars: WireArithmetic.base32Chars(queryOverhead + mtu), labelSize: WireArithmetic.maxLabel,
                                domainLength: d)
    }

    /// TXT data bytes the server puts in one response when `-mtu` is `limit`
    /// (dnstt-server/main.go computeMaxEncodedPayload); 0 when nothing fits.
    public static func maxEncodedPayload(limit: Int) -> Int {
        WireArithmetic.largest(in: 0...limit) {
            WireArithmetic.responseBytes(questionNameText: worstQuestionNameText, rdataLengths: [WireArithmetic.txtRdata($0)]) <= limit
        } ?? 0
    }

    /// KCP MTU of the server's downstream for `-mtu limit` (maxEncodedPayload less one length prefix).
    public static func downloadMTU(limit: Int) -> Int { maxEncodedPayload(limit: limit) - packetLengthPrefix }

    /// Smallest `-mtu` the server starts with.
    public static let minimumLimit: Int = WireArithmetic.largest(in: 0...maximumMTU) { downloadMTU(limit: $0) < minimumMTU }.map { $0 + 1 } ?? 0

    public func upload(for pair: PairMeasurement) -> DirectionFigure {
        let setting = "(none: dnstt-client derives it from DOMAIN)"
        let d = WireArithmetic.domainLength(pair.domain)
        let mtu = Self.uploadMTU(domainLength: d)
        guard mtu >= Self.minimumMTU else {
            return DirectionFigure(value: nil, boundBy: .belowEngineMinimum, setting: setting, userSettable: false)
        }
        guard let measured = pair.longestName else {
            return DirectionFigure(value: nil, boundBy: .notMeasured, setting: setting, userSettable: false)
        }
        guard Self.uploadNameText(mtu: mtu, domainLength: d) <= min(measured, WireArithmetic.maxNameText) else {
            return DirectionFigure(value: nil, boundBy: .queryName, setting: setting, userSettable: false)
        }
        return DirectionFigure(value: mtu, boundBy: .engineNameBudget, payloadBytes: mtu, setting: setting, userSettable: false)
    }

    public func download(for pair: PairMeasurement, upload: Int?) -> DirectionFigure {
        let setting = "dnstt-server -mtu"
        guard upload != nil else { return DirectionFigure(value: nil, boundBy: .uploadUnusable, recordType: .txt, setting: setting) }
        guard let response = pair.responses[.txt] else {
            return DirectionFigure(value: nil, boundBy: .notMeasured, recordType: .txt, setting: setting)
        }
        var value = min(response.bytes, Self.maximumMTU)
        var bound: BindingLimit = response.bytes > Self.maximumMTU ? .engineMaximum
            : response.isLowerBound ? .measurementCeiling : .responseSize
        if let edns = pair.upstreamEDNS {
            let advertised = max(edns, Self.minimumEDNS)
            if advertised < value { value = advertised; bound = .upstreamEDNS }
        }
        guard value >= Self.minimumLimit else {
            return DirectionFigure(value: nil, boundBy: .belowEngineMinimum, recordType: .txt, setting: setting)
        }
        return DirectionFigure(value: value, boundBy: bound, recordType: .txt, payloadBytes: Self.downloadMTU(limit: value),
                               setting: setting)
    }

    /// dnstt-client's resolver flag for the transport the pair was measured over (dnstt README:
    /// `-udp ADDR:PORT`, `-dot ADDR:PORT`, `-doh URL`); dnstt has no plain-TCP mode, so a TCP pair
    /// is a comment. DoT with a server name: dnstt checks the certificate against the host it is
    /// given, so the name goes in (dnstt resolves it) and the measured address is in a comment.
    static func clientArgument(_ address: ResolverAddress) -> String {
        switch address.transport {
        case .udp: return "-udp \(address.hostPort)"
        case .tcp: return "# \(address.target?.description ?? address.hostPort): dnstt-client has no plain-TCP transport (use -udp, -dot or -doh)"
        case .tls:
            guard let name = address.target?.serverName else { return "-dot \(address.hostPort)" }
            return "-dot \(name):\(address.port)  # measured at \(address.hostPort)"
        case .https:
            return "-doh \(address.target?.url ?? address.hostPort)" + (address.target?.serverName != nil ? "  # measured at \(address.hostPort)" : "")
        }
    }

    /// `dnstt-client` arguments, one line per usable resolver (the client takes one `-udp`), and the
    /// server's `-mtu` flag.
    public func exports(_ synced: SyncedFigures) -> [ExportFile] {
        var seen = Set<String>()
        var client = ["# dnstt-client: one resolver per run; replace PUBKEYFILE, DOMAIN and LOCALADDR:PORT"]
        for pair in synced.usable {
            guard let address = ResolverAddress(pair.resolver), seen.insert(address.target?.description ?? address.hostPort).inserted else { continue }
            client.append(Self.clientArgument(address))
        }
        var server = ["# dnstt-server: the largest response every usable resolver carries"]
        if let mtu = synced.download { server.append("-mtu \(mtu)") } else { server.append("# no usable resolver") }
        return [ExportFile(name: "dnstt-client.args", text: client.joined(separator: "\n") + "\n"),
                ExportFile(name: "dnstt-server.args", text: server.joined(separator: "\n") + "\n")]
    }
}
