public import Base

/// The BPF filter for capturing probe traffic only: UDP to or from the given resolver endpoints.
public enum ProbeCapture {
    /// Above this many endpoints the filter names ports only: a BPF program with thousands of host
    /// terms compiles slowly and runs a long chain per packet.
    public static let maxHostTerms = 256

    /// `udp and ((host A and port P) or ...)`, with fragments of those hosts kept so that large
    /// answers can be reassembled (later fragments carry no port). Endpoints are deduplicated. With
    /// more than `maxHostTerms` endpoints: `udp and (port P or ...)` plus every IPv4 fragment.
    public static func filter(for endpoints: [Endpoint]) -> String {
        let unique = Array(Set(endpoints)).sorted { ($0.address, $0.port) < ($1.address, $1.port) }
        guard !unique.isEmpty else { return "udp" }
        if unique.count > maxHostTerms {
            let ports = Array(Set(unique.map(\.port))).sorted().map { "port \($0)" }
            return "(udp and (\(ports.joined(separator: " or ")))) or (ip[6:2] & 0x1fff != 0)"
        }
        let terms = unique.map { "(host \($0.address) and port \($0.port))" }
        let hosts = Array(Set(unique.map(\.address))).sorted().map { "host \($0)" }
        let fragments = "(ip[6:2] & 0x1fff != 0 and (\(hosts.joined(separator: " or "))))"
        return "(udp and (\(terms.joined(separator: " or ")))) or \(fragments)"
    }

    /// A live capture of the probe traffic to `endpoints` on `device` ("any" by default), written to `path`.
    public static func live(endpoints: [Endpoint], device: String = "any", writeTo path: String?,
                            onPacket: (@Sendable (DecodedPacket) -> Void)? = nil) -> LiveCapture {
        LiveCapture(device: device, filter: filter(for: endpoints), writeTo: path, onPacket: onPacket)
    }
}
