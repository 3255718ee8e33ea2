// What each fuzz target does with its input, in the root package so that the fuzz executables
// (Fuzz/Targets, built with -sanitize=fuzzer by scripts/fuzz.sh) and the regression tests
// (Tests/FuzzRegressionTests, every saved crash and seed input) run exactly the same code.
import Capture
import DNSWire
import Fates
import Foundation
import Impairment
import ProbeClient
import Reports
import TraceAnalysis
import TunnelVerify
import TunnelprobeCommands

public enum FuzzEntry: String, CaseIterable, Sendable {
    case dns
    case pcap
    case fates
    case profile
    case resolvers
    case impair
    case report
    case mdvreply

    /// Hands one input to this target's parser; any outcome but a crash or a hang is a pass.
    public func run(_ bytes: [UInt8]) {
        switch self {
        case .dns: Self.dns(bytes)
        case .pcap: Self.pcap(bytes)
        case .fates: Self.fates(bytes)
        case .profile: Self.profile(bytes)
        case .resolvers: Self.resolvers(bytes)
        case .impair: Self.impair(bytes)
        case .report: Self.report(bytes)
        case .mdvreply: Self.mdvreply(bytes)
        }
    }

    /// An answer to `scan --server masterdnsvpn` from an untrusted resolver: the DNS message, the
    /// MasterDnsVPN frame in its TXT records (raw and base64, one record or chunks) judged against an
    /// upload and a download request, and every question name read back as a request.
    static func mdvreply(_ bytes: [UInt8]) {
        guard let message = try? DNSMessage(parsing: bytes) else { return }
        MasterDnsVPNServerProber.fuzzJudge(message)
    }

    /// A DNS message from an untrusted resolver: the total parser, then the cheaper summary reader that
    /// the trace hot path uses, and a round trip of whatever parsed.
    static func dns(_ bytes: [UInt8]) {
        if let message = try? DNSMessage(parsing: bytes) {
            _ = try? message.serialized()
        }
        bytes.withUnsafeBytes { _ = try? DNSMessage.summary(parsing: $0) }
    }

    /// A capture file as `trace` and `simulate --pcap` read it: the reader, the decoder, the DNS
    /// transaction matcher, the statistics and the fates export.
    static func pcap(_ bytes: [UInt8]) {
        let path = FuzzInput.file(bytes, name: "input.pcap")
        var options = TraceOptions()
        options.recordFates = true
        var analyzer = TraceAnalyzer(options: options)
        guard let file = try? analyzer.read(path: path) else { return }
        analyzer.finish()
        _ = analyzer.result(files: [file])
        _ = analyzer.fateTrace(source: .init(kind: "trace", description: "fuzz", file: path, sha256: ""))
    }

    /// A fates file (docs/FATES.md) as `simulate --fates` and `impair --replay` read it.
    static func fates(_ bytes: [UInt8]) {
        _ = try? FateTrace.decode(Data(bytes))
    }

    /// An engine profile as `verify` and `resilience` read it.
    static func profile(_ bytes: [UInt8]) {
        _ = try? Profile.parse(bytes)
    }

    /// A resolver list as `scan` and `path` read it. The CIDR cap is lowered so that one input costs
    /// little time; the capping itself is what is exercised.
    static func resolvers(_ bytes: [UInt8]) {
        var list = ResolverList()
        list.add(bytes: bytes, source: "fuzz", cidrCap: 1024)
        _ = list.issues.map(\.description)
    }

    /// The flags of `impair` (and `lab up --impair`): the input is split into arguments at NUL and
    /// newline bytes, parsed by swift-argument-parser and turned into a checked configuration.
    static func impair(_ bytes: [UInt8]) {
        let arguments = bytes.split(omittingEmptySubsequences: false) { $0 == 0 || $0 == 0x0A }
            .map { String(decoding: $0, as: UTF8.self) }
        guard let options = try? ImpairOptions.parse(arguments) else { return }
        do {
            _ = try options.config(requireEndpoints: false)
        } catch {
            _ = ImpairOptions.message(error)
        }
    }

    /// A report JSON file as `report render` reads it: loaded from its directory, then rendered to the
    /// page and to Markdown (the renderers see whatever numbers a corrupt file holds); then the same
    /// file with a quarter of its numbers replaced by extremes (`ReportExtremes`, seeded by the input),
    /// so every kind's renderers meet Int.max, negatives and 1e308 in every field the corpus reaches.
    static func report(_ bytes: [UInt8]) {
        render(bytes)
        let extreme = ReportExtremes.seeded(bytes, seed: ReportExtremes.hash(bytes), share: 0.25)
        if extreme != bytes { render(extreme) }
    }

    /// Loads `bytes` as a run directory's only report and renders it to the page and to Markdown.
    public static func render(_ bytes: [UInt8]) {
        _ = FuzzInput.file(bytes, name: "report.json")
        guard let directory = try? RunDirectory.load(FuzzInput.scratch) else { return }
        _ = directory.indexHTML()
        _ = directory.reports.map(\.markdown)
    }
}
