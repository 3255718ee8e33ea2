/// What `up` built and `status` found: the addresses to aim at and whether everything runs.
public struct LabStatus: Sendable, Codable, Hashable {
    /// The network namespace of each role.
    public struct Namespaces: Sendable, Codable, Hashable {
        public var client: String
        public var resolver: String
        public var server: String

        public init(client: String, resolver: String, server: String) {
            self.client = client
            self.resolver = resolver
            self.server = server
        }
    }

    public var name: String
    public var namespaces: Namespaces
    public var clientAddress: String
    public var resolverAddress: String
    public var resolverPort: Int
    /// Every address of this prefix reaches the same unbound from the client namespace.
    public var resolverAliases: String
    public var serverAddress: String
    public var domain: String
    /// The responder's key: 32 random bytes as 64 lowercase hex digits and a newline, mode 0600.
    public var keyFile: String
    public var resolverUDPLimit: Int?
    public var stateDirectory: String
    public var processes: [LabProcess]
    /// With `lab up --impair`: the address in the client namespace where the impairment relay
    /// listens (port 53) in front of the resolver, and the relay's JSON-lines log (docs/IMPAIR.md).
    public var impairedResolverAddress: String?
    public var impairLog: String?
    /// Every namespace exists and every process runs.
    public var healthy: Bool
    /// The tunnel servers, when the lab runs them (`LabConfig.tunnelDomain`).
    public var tunnel: LabTunnelServers?

    public init(
        name: String, namespaces: Namespaces, clientAddress: String, resolverAddress: String,
        resolverPort: Int, resolverAliases: String, serverAddress: String, domain: String,
        keyFile: String, resolverUDPLimit: Int?, stateDirectory: String, processes: [LabProcess],
        healthy: Bool, impairedResolverAddress: String? = nil, impairLog: String? = nil,
        tunnel: LabTunnelServers? = nil
    ) {
        self.name = name
        self.namespaces = namespaces
        self.clientAddress = clientAddress
        self.resolverAddress = resolverAddress
        self.resolverPort = resolverPort
        self.resolverAliases = resolverAliases
        self.serverAddress = serverAddress
        self.domain = domain
        self.keyFile = keyFile
        self.resolverUDPLimit = resolverUDPLimit
        self.stateDirectory = stateDirectory
        self.processes = processes
        self.healthy = healthy
        self.impairedResolverAddress = impairedResolverAddress
        self.impairLog = impairLog
        self.tunnel = tunnel
    }
}

/// One daemon of a lab.
public struct LabProcess: Sendable, Codable, Hashable {
    /// "unbound", "responder" or "impair".
    public var role: String
    public var pid: Int32
    public var running: Bool
    /// Its stdout and stderr.
    public var log: String

    public init(role: String, pid: Int32, running: Bool, log: String) {
        self.role = role
        self.pid = pid
        self.running = running
        self.log = log
    }
}
