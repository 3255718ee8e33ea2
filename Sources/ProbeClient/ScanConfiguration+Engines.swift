public import DNSWire
import EngineModels
import ProbeProtocol
public import Results

extension ScanConfiguration {
    /// The record types `engines` answer with, TXT first (the pair's `download`), then the others in
    /// name order (NULL for iodine): what `scan` measures without `--record-type`, and what `sweep`
    /// always measures.
    public static func recordTypes(answering engines: [Engine]) -> [DNSType] {
        let wanted = Set(engines.map { EngineCatalog.model(for: $0).downloadRecordType.rawValue })
        let ordered = ["TXT"] + wanted.subtracting(["TXT"]).sorted()
        return ordered.compactMap { DNSType(name: $0) }.filter { DownloadLayout.supportedTypes.contains($0) }
    }
}
