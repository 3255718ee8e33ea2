/// What bound an engine figure for one pair.
public enum BindingLimit: String, Sendable, Hashable, Codable, CaseIterable {
    /// The resolver's longest intact query name (shorter than the 253 characters DNS allows).
    case queryName
    /// The 253-character name limit of RFC 1035 2.3.4, as the engine fills it under this domain.
    case nameCapacity
    /// The engine's own name budget for this domain, below what 253 characters would allow
    /// (MasterDnsVPN Python, dnstt and slipstream size their frames from the domain by formula).
    case engineNameBudget
    /// The resolver's largest intact response of the record type the engine uses.
    case responseSize
    /// The EDNS UDP size the resolver advertises upstream (dnstt refuses smaller ones).
    case upstreamEDNS
    /// The measurement this figure needs is missing (no name length, or no response size for the
    /// record type the engine uses).
    case notMeasured
    /// A hard maximum in the engine's code.
    case engineMaximum
    /// What the resolver carries leaves less than the engine's minimum: the pair cannot carry it.
    case belowEngineMinimum
    /// The engine cannot build its queries in this configuration (a label would exceed 63 octets).
    case engineUnsupported
    /// The engine uses a fixed size that the resolver carries (slipstream's server QUIC MTU).
    case fixedByEngine
    /// The engine tests download only after upload passed, and upload did not.
    case uploadUnusable
    /// The measurement's top size passed, so the resolver may carry more than the figure says.
    case measurementCeiling

    /// A short phrase for tables.
    public var phrase: String {
        switch self {
        case .queryName: "query name length"
        case .nameCapacity: "253-character name"
        case .engineNameBudget: "engine's name budget for the domain"
        case .responseSize: "response size"
        case .upstreamEDNS: "upstream EDNS size"
        case .notMeasured: "not measured"
        case .engineMaximum: "engine maximum"
        case .belowEngineMinimum: "below engine minimum"
        case .engineUnsupported: "unsupported by engine"
        case .fixedByEngine: "fixed by engine"
        case .uploadUnusable: "upload unusable"
        case .measurementCeiling: "measurement ceiling"
        }
    }
}
