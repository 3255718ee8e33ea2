import Foundation

/// The DNS-tunnel engines (and editions) whose units ``EngineModel`` values speak.
///
/// Each case names one program a user runs; its model says how that program turns a resolver's
/// measured limits into the numbers the user types. `docs/ENGINES.md` lists the source each fact
/// comes from.
public enum Engine: String, Sendable, Hashable, Codable, CaseIterable {
    /// MasterDnsVPN, Go edition (masterking32/MasterDnsVPN at HEAD).
    case masterDnsVPNGo = "masterdnsvpn-go"
    /// MasterDnsVPN, Python edition (masterking32/MasterDnsVPN at cbdf406^).
    case masterDnsVPNPython = "masterdnsvpn-python"
    /// dnstt (www.bamsoftware.com/git/dnstt.git).
    case dnstt
    /// slipstream (Mygod/slipstream-rust; EndPositive/slipstream shares the constants).
    case slipstream
    /// iodine 0.7 (yarrick/iodine tag v0.7.0).
    case iodine

    /// The name a user gives on the command line (`--engine masterdnsvpn,dnstt`): the raw value, or a
    /// short alias (`masterdnsvpn` and `mdv` mean the Go edition, `mdv-python` the Python one).
    /// Returns nil for anything else.
    public init?(name: String) {
        let key = name.trimmingCharacters(in: .whitespaces).lowercased()
        switch key {
        case "masterdnsvpn", "mdv", "masterdnsvpn-go", "mdv-go": self = .masterDnsVPNGo
        case "masterdnsvpn-python", "mdv-python", "mdv-py": self = .masterDnsVPNPython
        case "dnstt": self = .dnstt
        case "slipstream", "slipstream-rust": self = .slipstream
        case "iodine": self = .iodine
        default: return nil
        }
    }

    /// A human label for tables.
    public var displayName: String {
        switch self {
        case .masterDnsVPNGo: "MasterDnsVPN (Go)"
        case .masterDnsVPNPython: "MasterDnsVPN (Python)"
        case .dnstt: "dnstt"
        case .slipstream: "slipstream"
        case .iodine: "iodine 0.7"
        }
    }
}
