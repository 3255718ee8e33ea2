public import ArgumentParser
public import Base
public import DNSWire
public import EngineModels
public import Impairment
public import Lab
public import LinkSim
public import ProbeClient
public import ProbeProtocol
public import ProbeServer
public import Results
public import TunnelVerify

// The closed sets the libraries define, read straight from the command line: ArgumentParser refuses
// any other value with one message that names the flag and lists the values it takes.

/// `scan --encoding`.
extension LabelEncoding: ExpressibleByArgument {}

/// `serve --edns`.
extension ProbeResponder.EDNSMode: ExpressibleByArgument {}

/// `--doh-method` (scan, path, rank, monitor): either case, as before.
extension TransportSettings.DoHMethod: ExpressibleByArgument {
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

/// `lab up --resolver-software`.
extension LabConfig.ResolverSoftware: ExpressibleByArgument {}

/// `impair --up-rate-excess` (also in `lab up --impair`).
extension DirectionConfig.RateExcess: ExpressibleByArgument {}

/// `impair --up-oversize`, `--down-oversize`.
extension DirectionConfig.Oversize: ExpressibleByArgument {}

/// `simulate --direction`: download, upload or both.
extension SimulationRequest.Transfer: ExpressibleByArgument {}

/// `rank --target-direction`: down or up.
extension Direction: ExpressibleByArgument {}

/// `simulate --engine`: a name `Engine(name:)` takes (`masterdnsvpn`, `mdv-python`, ...).
extension Engine: ExpressibleByArgument {
    public init?(argument: String) { self.init(name: argument) }
}

/// `scan --encryption-method`: MasterDnsVPN's DATA_ENCRYPTION_METHOD, as the number 0-5 or its name.
extension EncryptionMethod: ExpressibleByArgument {
    public init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).lowercased()
        guard let number = Int(text) ?? MasterDnsVPNMTUProbe.methodNames.firstIndex(of: text) else { return nil }
        self.init(rawValue: number)
    }

    public var defaultValueDescription: String { "\(rawValue)" }

    public static var allValueStrings: [String] { ["0-5"] + MasterDnsVPNMTUProbe.methodNames }
}

/// `scan --edns`: what download probes ask of the responder, by the name scan.json records.
extension ProbeMeta.EDNSRequest: ExpressibleByArgument {
    public init?(argument: String) {
        guard let request = Self.allCases.first(where: { $0.name == argument }) else { return nil }
        self = request
    }

    public var defaultValueDescription: String { name }

    public static var allValueStrings: [String] { allCases.map(\.name) }

    /// The flag's word for the request, as `scan.json` settings write it.
    var name: String {
        switch self {
        case .server: "server"
        case .honor: "honor"
        case .ignore: "ignore"
        }
    }
}

/// `verify --engine`, `resilience --engine`, `scan --e2e-engine`; `masterdns`, the profile's name for
/// the protocol, names MasterDnsVPN too.
extension EngineKind: ExpressibleByArgument {
    public init?(argument: String) { self.init(rawValue: argument == "masterdns" ? "masterdnsvpn" : argument) }
}

/// `resilience --scenarios none`: no scenario, the cycles alone.
extension DisruptionKind: NoneIsAChoice {}
