public import Base

/// The seed's diagnostics list for a DNS-tunnel engine, read from its log (and the uplink capture
/// for the carrier's packets). A counter the engine does not expose is null, with the reason under
/// `unavailable[field]`.
public struct EngineDiagnostics: Codable, Sendable, Hashable {
    @NullCoded public var enginePhase: String?
    @NullCoded public var selectedResolver: String?
    @NullCoded public var sessionID: String?
    @NullCoded public var acceptedResolvers: Int?
    @NullCoded public var rejectedResolvers: Int?
    @NullCoded public var uploadMTU: Int?
    @NullCoded public var downloadMTU: Int?
    /// Carrier packets to / from the resolvers, counted on the sandbox's uplink capture.
    @NullCoded public var packetsUp: Int?
    @NullCoded public var packetsDown: Int?
    @NullCoded public var arqResends: Int?
    @NullCoded public var arqNacks: Int?
    @NullCoded public var fecNegotiated: Bool?
    @NullCoded public var fecRecoveredPackets: Int?
    /// The FEC the profile asked for (the seed's level table), null when it asks for none.
    @NullCoded public var fecRequested: FECPreset?
    /// Why each null field is null.
    public var unavailable: [String: String]
    /// Where each present field was read.
    public var sources: [String: String]

    public init(unavailable: [String: String] = [:], sources: [String: String] = [:]) {
        self.unavailable = unavailable
        self.sources = sources
    }
}

extension EngineDiagnostics {
    /// The seed's list in its order: (label, value or nil, why nil).
    public var rows: [(label: String, value: String?, why: String?)] {
        func row(_ label: String, _ key: String, _ value: String?) -> (String, String?, String?) {
            (label, value, value == nil ? unavailable[key] : nil)
        }
        let fec = fecRequested.map { "\($0.level) (group \($0.groupSize), overhead \($0.overheadPercent)%, flush \($0.flushTimeoutMs) ms)" }
        return [
            row("engine phase", "enginePhase", enginePhase),
            row("selected resolver", "selectedResolver", selectedResolver),
            row("session id", "sessionID", sessionID),
            row("accepted resolvers", "acceptedResolvers", acceptedResolvers.map(String.init)),
            row("rejected resolvers", "rejectedResolvers", rejectedResolvers.map(String.init)),
            row("synced MTU up/down", "uploadMTU", uploadMTU.map { "\($0) / \(downloadMTU.map(String.init) ?? "-")" }),
            row("packets up", "packetsUp", packetsUp.map(String.init)),
            row("packets down", "packetsDown", packetsDown.map(String.init)),
            row("ARQ resends", "arqResends", arqResends.map(String.init)),
            row("ARQ NACKs", "arqNacks", arqNacks.map(String.init)),
            ("FEC requested", fec ?? "none", nil),
            row("FEC negotiated", "fecNegotiated", fecNegotiated.map { $0 ? "yes" : "no" }),
            row("FEC recovered packets", "fecRecoveredPackets", fecRecoveredPackets.map(String.init)),
        ]
    }
}
