import Base
import OSLayer

/// Finds the external programs the lab needs, naming the Debian package when one is missing.
enum Toolbox {
    static func locate(_ program: String) -> String? { Executables.locate(program) }

    static func require(_ program: String, package: String) throws(LabError) -> String {
        guard let path = locate(program) else {
            throw LabError(.missingTool, "`\(program)` not found: install the Debian package \(package) (apt-get install \(package))")
        }
        return path
    }
}

/// The external programs a lab operation needs, checked before anything is changed.
struct Tools {
    var ip: String
    var unbound: String
    /// Knot Resolver's daemon, for labs with `resolverSoftware: .knot`.
    var kresd = ""

    static func locate(needUnbound: Bool, needKresd: Bool = false) throws(LabError) -> Tools {
        guard SystemCalls.isRoot else {
            throw LabError(.notRoot, "the lab needs root (network namespaces, veth pairs, port 53): run as root or with sudo")
        }
        let ip = try Toolbox.require("ip", package: "iproute2")
        let unbound = needUnbound ? try Toolbox.require("unbound", package: "unbound") : ""
        let kresd = needKresd ? try Toolbox.require("kresd", package: "knot-resolver") : ""
        return Tools(ip: ip, unbound: unbound, kresd: kresd)
    }
}
