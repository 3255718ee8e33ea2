import Logging

/// The lab's own CA and the resolver's certificate for DoT and DoH, made anew for every lab with the
/// openssl command-line tool (Debian `openssl`): a CA that exists only in the lab's state directory,
/// so no test ever trusts anything outside it.
public enum LabCertificates {
    /// The name the resolver's certificate carries (with its IPv4 and IPv6 addresses).
    public static let resolverName = "resolver.lab.test"

    public static func caPath(_ directory: String) -> String { directory + "/lab-ca.pem" }
    static func caKeyPath(_ directory: String) -> String { directory + "/lab-ca.key" }
    static func certificatePath(_ directory: String) -> String { directory + "/resolver.pem" }
    static func keyPath(_ directory: String) -> String { directory + "/resolver.key" }

    /// Writes the CA and the resolver's key and certificate (P-256, valid 2 days) into `directory`.
    static func make(in directory: String, labName: String, logger: Logger) async throws(LabError) {
        let openssl = try Toolbox.require("openssl", package: "openssl")
        let extensions = directory + "/resolver-ext.cnf"
        let sans = "DNS:\(resolverName),IP:\(LabTopology.resolverClientSideAddress),IP:\(LabTopology.resolverAddress6)"
        try SystemCalls.writeFile(extensions, """
            subjectAltName=\(sans)
            basicConstraints=critical,CA:FALSE
            keyUsage=critical,digitalSignature
            extendedKeyUsage=serverAuth

            """, mode: 0o644)
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try await CommandRunner.check([openssl, "req", "-x509"] + curve + [
            "-keyout", caKeyPath(directory), "-out", caPath(directory), "-days", "2",
            "-subj", "/CN=tunnelprobe lab \(labName) CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ], logger: logger)
        let request = directory + "/resolver.csr"
        try await CommandRunner.check([openssl, "req", "-new"] + curve + [
            "-keyout", keyPath(directory), "-out", request, "-subj", "/CN=\(resolverName)",
        ], logger: logger)
        try await CommandRunner.check([
            openssl, "x509", "-req", "-in", request, "-CA", caPath(directory), "-CAkey", caKeyPath(directory),
            "-set_serial", "2", "-days", "2", "-extfile", extensions, "-out", certificatePath(directory),
        ], logger: logger)
    }
}
