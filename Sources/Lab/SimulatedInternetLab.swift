public import DNSWire
import Foundation
import OSLayer
public import Logging
public import ProbeProtocol
import Synchronization

/// The namespace of the simulated internet and its responder thread: `up` creates
/// `tpsim-<6 hex>` with `lo` up and 198.19.0.0/16 and 2001:db8:19::/112 routed locally (and
/// `SimulatedInternet.client6` on `lo`, the IPv6 scanner's source), and starts the responder inside
/// it; `down` stops the responder and deletes the namespace (which removes the route and the
/// socket with it). Nothing else is created.
public final class SimulatedInternetLab: Sendable {
    public let namespace: String
    public let responder: SimulatedResponder
    private let ip: String
    private let logger: Logger
    private let finished = Mutex<Bool>(false)

    private init(namespace: String, responder: SimulatedResponder, ip: String, logger: Logger) {
        self.namespace = namespace
        self.responder = responder
        self.ip = ip
        self.logger = logger
    }

    /// `["ip", "netns", "exec", namespace] + command`.
    public func exec(_ command: [String]) -> [String] { [ip, "netns", "exec", namespace] + command }

    public static func up(seed: UInt64, mix: SimulatedInternet.Mix, zone: DNSName, key: ProbeKey,
                          logger: Logger) async throws(LabError) -> SimulatedInternetLab {
        guard ProcessControl.isRoot else { throw LabError(.notRoot, "the simulated internet needs root (network namespaces)") }
        let ip = try Toolbox.require("ip", package: "iproute2")
        var name = "tpsim-"
        for _ in 0..<6 { name.append(String(UInt8.random(in: 0...15), radix: 16)) }
        let lab = SimulatedInternetLab(namespace: name, responder: SimulatedResponder(seed: seed, mix: mix, zone: zone, key: key),
                                       ip: ip, logger: logger)
        do {
            try await CommandRunner.check([ip, "netns", "add", name], logger: logger)
            try await CommandRunner.check([ip, "-n", name, "link", "set", "lo", "up"], logger: logger)
            try await CommandRunner.check([ip, "-n", name, "route", "add", "local", SimulatedInternet.prefix, "dev", "lo"], logger: logger)
            try await CommandRunner.check([ip, "-n", name, "-6", "route", "add", "local", SimulatedInternet.prefix6, "dev", "lo"], logger: logger)
            try await CommandRunner.check([ip, "-n", name, "-6", "addr", "add", SimulatedInternet.client6 + "/128", "dev", "lo"], logger: logger)
            try await lab.startResponder()
        } catch {
            await lab.down()
            throw error
        }
        return lab
    }

    private func startResponder() async throws(LabError) {
        let path = "/run/netns/\(namespace)"
        let responder = self.responder
        let failure: String? = await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            let resumed = OnceFlag()
            let once: @Sendable (String?) -> Void = { value in
                if resumed.first() { continuation.resume(returning: value) }
            }
            NetworkNamespace.detachThread(in: path) { entered in
                switch entered {
                case .failure(.open(let code)): once("cannot open \(path): \(code)")
                case .failure(.enter(let code)): once("cannot enter \(path): \(code)")
                case .success:
                    if let error = responder.serve(ready: { once(nil) }) { once(error) }
                }
            }
        }
        if let failure { throw LabError(.startFailed, "simulated internet responder: \(failure)") }
    }

    /// Stops the responder and deletes the namespace; safe to call more than once.
    public func down() async {
        guard !finished.withLock({ f in defer { f = true }; return f }) else { return }
        responder.stop()
        do {
            try await CommandRunner.check([ip, "netns", "del", namespace], logger: logger)
        } catch {
            logger.warning("\(error)")
        }
    }

    /// Runs `command` inside the namespace with this process's standard input and output.
    public func run(_ command: [String]) async throws(LabError) -> Int32 {
        try await CommandRunner.runInheritingStandardIO(exec(command))
    }
}

/// True the first time only.
final class OnceFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func first() -> Bool { !flag.exchange(true, ordering: .acquiringAndReleasing) }
}
