public import Results
/// slipstream (Mygod/slipstream-rust, commit c7b265c; EndPositive/slipstream at dd11646 uses the
/// same two constants).
///
/// Nothing is a setting: the client derives its QUIC MTU from the domain length
/// (`uploadMTU`), sends each packet as base32 in 57-character labels, and the server sends QUIC
/// packets of up to 900 bytes in one TXT record. A pair is usable when the resolver passes the
/// client's longest name and the response carrying a full server packet in answer to it. The user
/// only names resolvers (`--resolver HOST:PORT`, repeatable). Sources: see ``citation``.
public struct SlipstreamModel: EngineModel {
    public init() {}

    public var engine: Engine { .slipstream }

    public var citation: SourceCitation {
        SourceCitation(repository: "Mygod/slipstream-rust", commit: "c7b265c11dd13d6dfd601bc81d54d61ee9bdde23", files: [
            "crates/slipstream-client/src/runtime/setup.rs", "crates/slipstream-dns/src/lib.rs", "crates/slipstream-dns/src/dots.rs",
            "crates/slipstream-dns/src/codec.rs", "crates/slipstream-dns/src/types.rs", "crates/slipstream-server/src/server.rs",
            "crates/slipstream-client/src/main.rs", "docs/config.md",
        ])
    }

    /// Characters per label (crates/slipstream-dns/src/dots.rs dotify: a dot after every 57).
    public static let labelSize = 57
    /// The server's QUIC packet size (crates/slipstream-server/src/server.rs QUIC_MTU; docs/config.md).
    public static let serverMTU = 900

    /// The client's QUIC MTU for a domain of `d` characters: (240 - d) / 1.6, truncated
    /// (crates/slipstream-client/src/runtime/setup.rs compute_mtu); 0 when the domain is too long.
    public static func uploadMTU(domainLength d: Int) -> Int {
        guard d >= 0, d < 240 else { return 0 }
        return Int((240.0 - Double(d)) / 1.6)
    }

    /// Text length of the name carrying a full client packet.
    public static func uploadNameText(domainLength d: Int) -> Int {
        WireArithmetic.nameText(payloadChars: WireArithmetic.base32Chars(uploadMTU(domainLength: d)), labelSize: labelSize,
                                domainLength: d)
    }

    /// Size of the response carrying a full server packet in answer to the longest query: one TXT
    /// record of 255-byte strings, the owner name a pointer to the question, the server's OPT
    /// record (crates/slipstream-dns/src/codec.rs encode_response).
    public static func fullResponseBytes(domainLength d: Int) -> Int {
        WireArithmetic.responseBytes(questionNameText: uploadNameText(domainLength: d),
                                     rdataLengths: [WireArithmetic.txtRdata(serverMTU)])
    }

    public func upload(for pair: PairMeasurement) -> DirectionFigure {
        let setting = "(none: slipstream-client derives it from --domain)"
        let d = WireArithmetic.domainLength(pair.domain)
        let mtu = Self.uploadMTU(domainLength: d)
        guard mtu > 0 else { return DirectionFigure(value: nil, boundBy: .belowEngineMinimum, setting: setting, userSettable: false) }
        guard let measured = pair.longestName else {
            return DirectionFigure(value: nil, boundBy: .notMeasured, setting: setting, userSettable: false)
        }
        guard Self.uploadNameText(domainLength: d) <= min(measured, WireArithmetic.maxNameText) else {
            return DirectionFigure(value: nil, boundBy: .queryName, setting: setting, userSettable: false)
        }
        return DirectionFigure(value: mtu, boundBy: .engineNameBudget, payloadBytes: mtu, setting: setting, userSettable: false)
    }

    public func download(for pair: PairMeasurement, upload: Int?) -> DirectionFigure {
        let setting = "(none: fixed in slipstream-server)"
        guard upload != nil else {
            return DirectionFigure(value: nil, boundBy: .uploadUnusable, recordType: .txt, setting: setting, userSettable: false)
        }
        guard let response = pair.responses[.txt] else {
            return DirectionFigure(value: nil, boundBy: .notMeasured, recordType: .txt, setting: setting, userSettable: false)
        }
        guard Self.fullResponseBytes(domainLength: WireArithmetic.domainLength(pair.domain)) <= response.bytes else {
            return DirectionFigure(value: nil, boundBy: .responseSize, recordType: .txt, setting: setting, userSettable: false)
        }
        return DirectionFigure(value: Self.serverMTU, boundBy: .fixedByEngine, recordType: .txt, payloadBytes: Self.serverMTU,
                               setting: setting, userSettable: false)
    }

    /// The client's resolver arguments, one `--resolver` per usable resolver.
    public func exports(_ synced: SyncedFigures) -> [ExportFile] {
        var seen = Set<String>()
        var lines = ["# slipstream-client: add --domain DOMAIN and the listen options"]
        for pair in synced.usable {
            guard let address = ResolverAddress(pair.resolver), seen.insert(address.target?.description ?? address.hostPort).inserted else { continue }
            lines.append(address.udpOnlyNote(engine: "slipstream") ?? "--resolver \(address.hostPort)")
        }
        return [ExportFile(name: "slipstream-client.args", text: lines.joined(separator: "\n") + "\n")]
    }
}
