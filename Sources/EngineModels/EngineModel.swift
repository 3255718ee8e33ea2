public import Results
/// An engine's arithmetic: from what tunnelprobe measured for a pair to the numbers the user types
/// into that engine, and the texts the engine reads.
///
/// Conforming types are plain values (`struct`s of the engine's configuration) so a scan can hold
/// one per `--engine` name. Upload is computed first because MasterDnsVPN pads its download probe
/// to the upload size: the download figure depends on the upload value the engine will use.
public protocol EngineModel: Sendable {
    /// Which engine and edition this models.
    var engine: Engine { get }
    /// The sources its constants come from.
    var citation: SourceCitation { get }
    /// The record type the engine's answers use (what `scan` must measure for its download figure).
    var downloadRecordType: RecordType { get }
    /// The data frame the engine sends at its MTU `mtu` upstream (`upload`) or downstream: what its
    /// FEC groups and what it adds per datagram; nil where the model does not describe it.
    func dataFrame(mtu: Int, upload: Bool) -> DataFrame?
    /// The upload figure through one pair.
    func upload(for pair: PairMeasurement) -> DirectionFigure
    /// The download figure through one pair when the engine uses `upload` (nil: no usable upload).
    func download(for pair: PairMeasurement, upload: Int?) -> DirectionFigure
    /// The texts the engine reads, for the usable pairs and the synced values.
    func exports(_ synced: SyncedFigures) -> [ExportFile]
}

extension EngineModel {
    /// TXT, as MasterDnsVPN, dnstt and slipstream answer.
    public var downloadRecordType: RecordType { .txt }

    /// No frame model unless the engine's model gives one.
    public func dataFrame(mtu: Int, upload: Bool) -> DataFrame? { nil }

    /// Both figures for one pair, the download computed with this pair's own upload value.
    public func figures(for pair: PairMeasurement) -> PairFigures {
        let up = upload(for: pair)
        return PairFigures(engine: engine, resolver: pair.resolver, domain: pair.domain,
                           upload: up, download: download(for: pair, upload: up.value))
    }

    /// Figures for every pair and the values one configuration can use across the usable ones:
    /// the minimum upload, then the minimum download with every pair's download recomputed at that
    /// upload (what the engine does once MIN = MAX pins the upload).
    public func synced(_ pairs: [PairMeasurement]) -> SyncedFigures {
        let all = pairs.map { figures(for: $0) }
        let first = all.filter(\.usable)
        let rejected = all.filter { !$0.usable }
        guard let upload = first.compactMap(\.upload.value).min() else {
            return SyncedFigures(engine: engine, upload: nil, download: nil, usable: [], rejected: rejected)
        }
        var usable: [PairFigures] = []
        var dropped = rejected
        for (figure, pair) in zip(all, pairs) where figure.usable {
            var again = figure
            again.download = download(for: pair, upload: upload)
            if again.usable { usable.append(again) } else { dropped.append(again) }
        }
        return SyncedFigures(engine: engine, upload: upload, download: usable.compactMap(\.download.value).min(),
                             usable: usable, rejected: dropped)
    }
}

/// The models with their default configurations, one per engine.
public enum EngineCatalog {
    /// Every engine's model as a user runs it by default (MasterDnsVPN with DATA_ENCRYPTION_METHOD 1,
    /// as both editions' sample configs set it; iodine with NULL queries and base32 names).
    public static let defaults: [any EngineModel] = [
        MasterDnsVPNGoModel(), MasterDnsVPNPythonModel(), DnsttModel(), SlipstreamModel(), IodineModel(),
    ]

    /// The default model for `engine`.
    public static func model(for engine: Engine) -> any EngineModel {
        switch engine {
        case .masterDnsVPNGo: MasterDnsVPNGoModel()
        case .masterDnsVPNPython: MasterDnsVPNPythonModel()
        case .dnstt: DnsttModel()
        case .slipstream: SlipstreamModel()
        case .iodine: IodineModel()
        }
    }

    /// Parses `masterdnsvpn,dnstt,...` into engines; unknown names are returned separately.
    public static func parse(_ list: String) -> (engines: [Engine], unknown: [String]) {
        var engines: [Engine] = []
        var unknown: [String] = []
        for part in list.split(separator: ",") {
            let name = String(part)
            if let e = Engine(name: name) {
                if !engines.contains(e) { engines.append(e) }
            } else if !name.allSatisfy(\.isWhitespace) {
                unknown.append(name)
            }
        }
        return (engines, unknown)
    }
}
