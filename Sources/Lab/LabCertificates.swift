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
    /// `expired`: the certificate is valid 2020-01-01 to 2020-01-02 only (`openssl ca` sets dates
    /// in the past; `openssl x509 -days` cannot), for the named failure `expired`.
    static func make(in directory: String, labName: String, expired: Bool = false, logger: Logger) async throws(LabError) {
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
        if expired {
            // A throwaway CA database in the state directory (removed with it).
            let db = directory + "/ca-db"
            try SystemCalls.makeDirectories(db, mode: 0o700)
            try SystemCalls.writeFile(db + "/index.txt", "", mode: 0o644)
            try SystemCalls.writeFile(db + "/serial", "02\n", mode: 0o644)
            try SystemCalls.writeFile(directory + "/ca.cnf", """
                [ca]
                default_ca = lab
                [lab]
                dir = \(db)
                database = $dir/index.txt
                serial = $dir/serial
                new_certs_dir = $dir
                default_md = sha256
                policy = any
                unique_subject = no
                copy_extensions = none
                [any]
                commonName = supplied

                """, mode: 0o644)
            try await CommandRunner.check([
                openssl, "ca", "-batch", "-notext", "-config", directory + "/ca.cnf", "-cert", caPath(directory),
                "-keyfile", caKeyPath(directory), "-in", request, "-startdate", "20200101000000Z", "-enddate", "20200102000000Z",
                "-extfile", extensions, "-out", certificatePath(directory),
            ], logger: logger)
            return
        }
        try await CommandRunner.check([
            openssl, "x509", "-req", "-in", request, "-CA", caPath(directory), "-CAkey", caKeyPath(directory),
            "-set_serial", "2", "-days", "2", "-extfile", extensions, "-out", certificatePath(directory),
        ], logger: logger)
    }
}
