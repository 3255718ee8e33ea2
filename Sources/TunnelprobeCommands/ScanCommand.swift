import Base
import ArgumentParser
import Capture
import DNSWire
import EngineModels
import Foundation
import NIOCore
import ProbeClient
import ProbeProtocol
import Reports
import Synchronization
import Results

struct ScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Find the resolver-domain pairs that carry a tunnel, and their upload and download MTU.",
        discussion: """
        Stages, cheapest first; a pair is dropped at its first failure with the reason kept:
        reachability -> honest answers -> upload MTU -> download MTU -> confirmation.
        Each MTU search tries the largest size first, then the smallest, then (downloads in TXT or \
        NULL) the sizes whose answers would fill 1232 and 512 bytes, then bisects; every size is \
        decided by probes (--attempts for losses), so a guess saves queries but never sets a result.
        A SERVFAIL that a control probe shares (the resolver answering from its failure cache) is \
        waited out, not taken as a size limit. Each pair names what bound its download size: TC \
        (the resolver's limit toward the client), upstream EDNS (the size the resolver advertises \
        upstream, when the responder honours it: `serve --edns honor`, or `scan --edns honor`), the \
        record type, loss, or another failure. `--edns ignore` asks the responder to answer whole, as \
        MasterDnsVPN's server does, whatever the resolver advertises.
        A pair whose confirmation probes were lost beyond --max-loss (loss with its Wilson 95 % \
        interval, RFC 7680) is flagged and left out of the exports and the synced MTU.
        Every pair is also given in the units of each engine named by --engine (default: all): \
        MasterDnsVPN's MIN/MAX_UPLOAD_MTU and MIN/MAX_DOWNLOAD_MTU (Go and Python editions), dnstt's \
        server -mtu, slipstream's usability, iodine's -M and -m, computed by the engine's model \
        (docs/ENGINES.md) from the measured name length and response size, with the synced values \
        and the files each engine reads under exports/<engine>/.
        With --server masterdnsvpn (--server-key-file, --encryption-method) nothing is deployed: the \
        probes are MasterDnsVPN's own MTU-test requests (Go edition), which its server answers before \
        any session, sent to the server you already run; the sizes are its MTUs, measured, and the \
        exports are its files. Its answers carry no MAC: a reply counts when it echoes the request's \
        random 4-byte code and size, which with methods 0 and 1 a resolver on the path can read (and \
        with method 1 every request shows the key's first 12 characters, as every frame of the engine \
        does; tunnelprobe's padding is random, the engine's own MTU probes show the whole key).
        Writes scan.json, scan.md and the engine exports into reports/<run-id>/.
        With --e2e (root), the real engine (verify's: iodine, masterdnsvpn, dnstt or --e2e-engine \
        command) is then started for each of the best --e2e-count usable pairs, pinned to that one \
        resolver (dnstt on the profile's tunnel domain, --e2e-domain): its handshake \
        time, the first data through the tunnel (--e2e-url) and a short bulk download's goodput \
        (--e2e-bulk-url, RFC 2647 3.17) go into the report, ranked; a pair that passed the probes but \
        fails end to end is shown so, with the engine's own words.

        Example:
          tunnelprobe scan --resolvers resolvers.txt --domain t.example.com --key-file probe.key
          tunnelprobe scan --resolvers resolvers.txt --domain v.example.com --server masterdnsvpn \\
            --server-key-file encrypt_key.txt --encryption-method aes-256-gcm
        """
    )

    @OptionGroup var resolverOptions: ResolverOptions
    @OptionGroup var transportOptions: TransportOptions

    @Option(name: .customLong("domain"), help: "Tunnel domain served by `tunnelprobe serve` (repeatable).")
    var domains: [String] = []

    @Option(help: "File with the pre-shared key (hexadecimal) shared with `tunnelprobe serve`; not used with --server masterdnsvpn.")
    var keyFile: String?

    @Option(help: "What answers the probes: tunnelprobe (`tunnelprobe serve`, authenticated answers) or masterdnsvpn (your own MasterDnsVPN server, Go edition, answering its own MTU-test requests: nothing to deploy, but its answers carry no MAC).")
    var server: ScanServer = .tunnelprobe

    @Option(help: "With --server masterdnsvpn: the server's key file (encrypt_key.txt, or a file holding the client's ENCRYPTION_KEY).")
    var serverKeyFile: String?

    @Option(help: "With --server masterdnsvpn: the server's DATA_ENCRYPTION_METHOD, 0-5 or none, xor, chacha20, aes-128-gcm, aes-192-gcm, aes-256-gcm.")
    var encryptionMethod: EncryptionMethod = .xor

    @Flag(help: "With --server masterdnsvpn: ask for base64 TXT answers, as a client with BASE_ENCODE_DATA = true does (the download MTU differs).")
    var baseEncodeData = false

    @Option(help: "Upload label encoding: base32, base36, base64url, base128.")
    var encoding: LabelEncoding = .base32

    @Option(help: "Record types for download probes, comma-separated: TXT, NULL, CNAME, MX, SRV, A, AAAA (default: the types the engines answer with, TXT and for iodine NULL). The first is the pair's `download`.")
    var recordType: RecordTypeList?

    @OptionGroup var mtuScan: MTUScanOptions

    @Option(help: "Pairs scanned at once.")
    var concurrency: Int = 256

    @Option(help: "What download probes ask of the responder: server (as `serve --edns` is set), honor (truncate at the EDNS size the resolver advertises upstream, as authoritative servers and dnstt do) or ignore (answer whole, as MasterDnsVPN's server does).")
    var edns: ProbeMeta.EDNSRequest = .server

    @Option(help: "Stop once this many pairs are accepted.")
    var minValid: Int?

    @Option(help: "Largest upload tried, in payload characters (default: all the name can hold).")
    var uploadMaxChars: Int?

    @Option(help: "Smallest download payload tried, in bytes.")
    var downloadMin: Int = 20

    @Option(help: "Largest download payload tried, in bytes.")
    var downloadMax: Int = 4096

    @Option(help: "Largest number of addresses taken from one CIDR block.")
    var cidrCap: Int = ResolverList.defaultCIDRCap

    @Option(help: "Seed for every random choice (order, DNS ids); random when absent, always reported.")
    var seed: UInt64?

    @Option(help: "Report directory (default reports/<run-id>).")
    var out: String?

    @Option(help: "Where this scan runs from, recorded in the report (default: host name).")
    var vantage: String?

    @Option(help: "Capture the probe traffic (UDP to and from the scanned resolvers) into this pcap file.")
    var capture: String?

    @Option(help: "Device for --capture (default: any, every interface of this network namespace).")
    var captureDevice: String = "any"

    @OptionGroup var endToEnd: EndToEndOptions

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard !domains.isEmpty else { throw ValidationError("give at least one --domain") }
        switch server {
        case .tunnelprobe:
            guard keyFile != nil else { throw ValidationError("give --key-file (the key `tunnelprobe serve` uses)") }
            guard serverKeyFile == nil, !baseEncodeData else {
                throw ValidationError("--server-key-file and --base-encode-data go with --server masterdnsvpn")
            }
        case .masterdnsvpn:
            guard serverKeyFile != nil else { throw ValidationError("--server masterdnsvpn needs --server-key-file (the server's encrypt_key.txt)") }
            guard recordType == nil || recordType?.types == [.txt] else {
                throw ValidationError("--server masterdnsvpn answers in TXT only; leave --record-type out")
            }
            guard edns == .server else { throw ValidationError("--edns asks `tunnelprobe serve`; MasterDnsVPN's server answers whole whatever the resolver advertises") }
            guard encoding == .base32 else { throw ValidationError("--encoding is tunnelprobe's; MasterDnsVPN's requests are in its own base 36") }
            guard uploadMaxChars == nil else { throw ValidationError("--upload-max-chars is tunnelprobe's; the engine's upload search runs from 10 to what the name holds") }
            guard mtuScan.engine == .all || mtuScan.engines == [.masterDnsVPNGo] else {
                throw ValidationError("--server masterdnsvpn measures in MasterDnsVPN's (Go edition) own units; --engine must be masterdnsvpn")
            }
        case .dnstt:
            // docs/ENGINES.md "Probing dnstt-server without its private key".
            throw ValidationError("--server dnstt: dnstt's server fills answers only for a Noise session, so what a resolver passes cannot be probed in its protocol; run `serve --forward` in front of it, or `scan --e2e --e2e-engine dnstt`")
        }
        guard !resolverOptions.isEmpty else {
            throw ValidationError("give --resolver or --resolvers FILE")
        }
        guard (1...10_000).contains(concurrency) else { throw ValidationError("--concurrency must be 1...10000") }
        guard 1 <= downloadMin, downloadMin <= downloadMax, downloadMax <= 65_000 else {
            throw ValidationError("--download-min and --download-max must satisfy 1 <= min <= max <= 65000")
        }
        if let m = minValid, m < 1 { throw ValidationError("--min-valid must be 1 or more") }
        if let u = uploadMaxChars, u < ProbeMeta.characterCount {
            throw ValidationError("--upload-max-chars must be at least \(ProbeMeta.characterCount) (the probe's meta block)")
        }
    }

    func run() async throws {
        let logger = common.logger("tunnelprobe.scan")
        let run = CommandRun(kind: "scan", out: out)
        let key: ProbeKey
        let serverProbe = try masterDnsVPNProbe()
        if let keyFile {
            key = try loadProbeKey(keyFile)
        } else {
            // Against a MasterDnsVPN server no probe of tunnelprobe's own is answered; the reachability
            // query needs no key. A throwaway one keeps the prober whole.
            var g = SystemRandomNumberGenerator()
            key = try ProbeKey(bytes: (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) })
        }
        let zones = try domainNames(domains)
        let list = try resolverOptions.list(cidrCap: cidrCap, streams: true)
        for issue in list.issues { logger.warning("\(issue)") }
        guard !list.resolvers.isEmpty else { throw fail("no usable resolver in the input", Exit.badInput) }

        let seed = seed ?? UInt64.random(in: 0...UInt64.max)
        let endToEndConfiguration = try await endToEnd.configuration(seed: seed)
        var configuration = ScanConfiguration(resolvers: list.resolvers, domains: zones)
        configuration.encoding = encoding
        let chosenEngines = serverProbe == nil ? mtuScan.engines : [.masterDnsVPNGo]
        configuration.recordTypes = serverProbe == nil ? recordTypes : [.txt]
        mtuScan.apply(to: &configuration, concurrency: concurrency, seed: seed)
        configuration.minValid = minValid
        configuration.uploadCharacters = ProbeMeta.characterCount...(uploadMaxChars ?? QNameCapacity.maxNameCharacters)
        configuration.downloadBytes = downloadMin...downloadMax

        let engine = QueryEngine(seed: seed)
        var prober = Prober(engine: engine, key: key, encoding: configuration.encoding, timeout: configuration.timeout,
                            pacer: mtuScan.pacer)
        prober.ednsRequest = edns
        let transports = try transportOptions.attach(to: &prober, list: list, seed: seed)
        let scanner = Scanner(configuration: configuration, prober: prober, masterDnsVPN: serverProbe)
        let liveCapture: LiveCapture?
        do { liveCapture = try startCapture(capture, device: captureDevice, endpoints: list.resolvers) } catch {
            await engine.shutdown()
            throw error
        }
        let progress = common.showsProgress ? ProgressLine() : nil
        var report: (@Sendable (ScanProgress) -> Void)?
        if let progress { report = { progress.update($0) } }
        let onProgress = report
        let task = Task { await scanner.run(progress: onProgress) }
        let result = await run.measure(onSignal: { task.cancel() }) { await task.value }
        progress?.finish()
        await engine.shutdown()
        await transports?.shutdown()
        if let liveCapture, let capture {
            let stats = liveCapture.stop()
            logger.notice("capture \(capture): \(stats.written) packets written, \(stats.droppedByKernel) dropped by the kernel")
        }

        var info = run.info(seed: seed, vantage: vantage)
        if result.interrupted { info.complete = false }
        var document = ScanReport.build(run: info, configuration: configuration, list: list, result: result,
                                        duration: Date().timeIntervalSince(run.started), engines: chosenEngines,
                                        models: serverProbe.map { [Self.model(of: $0)] })
        document.settings.edns = edns.name
        if let serverProbe {
            document.settings.encoding = "lowerbase36"
            document.server = ScanServerProbing(
                edition: "go", encryptionMethod: serverProbe.cipher.method,
                encryptionName: MasterDnsVPNMTUProbe.methodNames[serverProbe.cipher.method],
                baseEncodeData: serverProbe.base64Replies, authentication: MasterDnsVPNMTUProbe.authentication,
                wireExposure: serverProbe.wireExposure, pairs: result.pairs, model: Self.model(of: serverProbe))
            if !result.pairs.isEmpty, result.pairs.allSatisfy({ $0.stage == .honesty && $0.failure == .noAnswer }) {
                logger.warning("every resolver relayed answers without the server's MTU reply: check --server-key-file and --encryption-method (they must match the server's), and that the domain is served by MasterDnsVPN")
            }
        }
        if let endToEndConfiguration, !result.interrupted {
            document.endToEnd = await endToEnd.run(endToEndConfiguration, pairs: result.pairs, logger: logger)
        }
        let json = try ReportWriter.json(document)
        try run.finish(json: json, files: [("scan.json", json), ("scan.md", document.markdown())] + document.engineExportFiles(),
                       summary: document.summaryLine(directory: run.directory), common: common)
        try run.exitStatus(failed: document.summary.accepted == 0)
    }
}

extension ScanCommand {
    /// `--record-type`, or the record types the engines answer with (TXT first).
    var recordTypes: [DNSType] { recordType?.types ?? ScanConfiguration.recordTypes(answering: mtuScan.engines) }

    /// The request builder for `--server masterdnsvpn`, nil for a scan of `serve`; a key file that
    /// cannot be read or is empty is one line and exit 66.
    func masterDnsVPNProbe() throws -> MasterDnsVPNMTUProbe? {
        guard server == .masterdnsvpn, let serverKeyFile else { return nil }
        let method = encryptionMethod.rawValue
        let text: String
        do { text = try String(contentsOfFile: serverKeyFile, encoding: .utf8) } catch {
            throw fail("--server-key-file \(serverKeyFile): cannot read it (\(error.localizedDescription))", Exit.badInput)
        }
        let length = text.trimmingCharacters(in: .whitespacesAndNewlines).count
        let required = MasterDnsVPNMTUProbe.serverKeyLength(method: method)
        guard length == 0 || length == required else {
            throw fail("--server-key-file \(serverKeyFile): holds \(length) characters; with method \(method) the server's key is exactly \(required) (a key file of another length is replaced by a random key when the server starts: use the server's encrypt_key.txt as it is now)", Exit.badInput)
        }
        do {
            return MasterDnsVPNMTUProbe(cipher: try MasterDnsVPNCipher(method: method, keyText: text), base64Replies: baseEncodeData)
        } catch {
            throw fail("--server-key-file \(serverKeyFile): \(error == .emptyKey ? "the file holds no key" : "\(error)")", Exit.badInput)
        }
    }

    static func model(of probe: MasterDnsVPNMTUProbe) -> MasterDnsVPNGoModel {
        MasterDnsVPNGoModel(encryption: EncryptionMethod(rawValue: probe.cipher.method) ?? .xor, baseEncodeData: probe.base64Replies)
    }
}

extension ScanReport {
    func summaryLine(directory: String) -> String {
        let accepted = "\(summary.accepted) of \(summary.pairs) pairs accepted"
        var s = summary.accepted > 0 ? Style.ok(accepted) : Style.bad(accepted)
        if let up = synced.upload, let down = synced.download {
            s += "; synced MTU upload \(up) B (QNAME \(synced.uploadQnameChars ?? 0) chars), download \(down) B (response \(synced.downloadResponseSize ?? 0) B)"
        }
        for e in engines ?? [] {
            if let up = e.synced.upload, let down = e.synced.download {
                s += "\n  \(e.name): upload \(up), download \(down) (\(e.synced.usable.count) usable)"
            } else {
                s += "\n  \(e.name): no usable pair"
            }
        }
        if let lossy = summary.lossExceeded, lossy > 0 {
            s += Style.warn("; \(lossy) lossy pair(s) above --max-loss left out of the exports")
        }
        if summary.notTested > 0 { s += "; \(summary.notTested) not tested" }
        if !run.complete { s += Style.warn(" [incomplete: \(run.interruption ?? "interrupted")]") }
        return s + "\nreport: \(directory)/scan.md"
    }
}

/// The terminal progress line: done/accepted/rejected/ETA, redrawn at most ten times a second.
final class ProgressLine: @unchecked Sendable {
    private let lock = NSLock()
    private var last = Date.distantPast

    func update(_ p: ScanProgress) {
        lock.lock()
        defer { lock.unlock() }
        guard Date().timeIntervalSince(last) >= 0.1 || p.done == p.total else { return }
        last = Date()
        let eta = p.etaSeconds.map { String(format: "%.0f s", $0) } ?? "-"
        FileHandle.standardError.write(Data("\r\u{1B}[Kscan: \(p.done)/\(p.total) done, \(p.accepted) accepted, \(p.rejected) rejected, ETA \(eta)".utf8))
    }

    func finish() { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
}

/// `scan --server`: what answers the probes. `dnstt` is a value so that it is refused with the reason
/// (its server answers only inside a Noise session), not as an unknown word.
enum ScanServer: String, CaseIterable, ExpressibleByArgument {
    case tunnelprobe, masterdnsvpn, dnstt
}

/// `--record-type TXT,NULL,...`: record types a download probe can ask for (`DownloadLayout`), in
/// the order given, each once; the first is the pair's `download`.
struct RecordTypeList: ExpressibleByArgument {
    let types: [DNSType]

    init?(argument: String) {
        var types: [DNSType] = []
        for name in argument.split(separator: ",") {
            guard let t = DNSType(name: name.trimmingCharacters(in: .whitespaces)), DownloadLayout.supportedTypes.contains(t) else { return nil }
            if !types.contains(t) { types.append(t) }
        }
        guard !types.isEmpty else { return nil }
        self.types = types
    }

    static var allValueStrings: [String] { ["TXT", "NULL", "CNAME", "MX", "SRV", "A", "AAAA"] }
}
