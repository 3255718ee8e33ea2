import Base
import Capture
import DNSWire
import ProbeProtocol

/// The pre-shared key in `path` (`--key-file`); a file that cannot be read or holds no key is one
/// line and exit 66.
func loadProbeKey(_ path: String) throws -> ProbeKey {
    do { return try ProbeKey.load(path: path) } catch { throw fail("\(error)", Exit.badInput) }
}

/// Each `--domain` as a DNS name; one that is not a name is one line and exit 64.
func domainNames(_ domains: [String]) throws -> [DNSName] {
    var zones: [DNSName] = []
    for d in domains {
        do { zones.append(try DNSName(d)) } catch { throw fail("--domain \(d): \(error)", .validationFailure) }
    }
    return zones
}

/// `--capture FILE` on `--capture-device` (scan, path): the probe traffic to and from `endpoints`,
/// captured from now on; nil without `--capture`. A capture that cannot start is one line and exit
/// 77 without the privilege, 69 otherwise.
func startCapture(_ path: String?, device: String, endpoints: [Endpoint]) throws -> LiveCapture? {
    guard let path else { return nil }
    let live = ProbeCapture.live(endpoints: endpoints, device: device, writeTo: path)
    do { try live.start() } catch {
        throw fail("--capture: \(error)", error.code == .permissionDenied ? Exit.noPermission : Exit.environment)
    }
    return live
}
