public import Results
/// `report compare A B`: what changed between two runs, stage by stage, in lines a person reads.
public struct ReportComparison: Codable, Sendable, Hashable {
    public static let schemaName = "tunnelprobe.compare/1"
    public var schema: String = ReportComparison.schemaName
    public var a: Side
    public var b: Side
    public var scan: ScanDiff?
    /// Every difference as one sentence, most important first; empty when nothing changed.
    public var changes: [String]
    /// Stages that could not be compared, and why (present in one run only, unreadable, ...).
    public var notes: [String]

    public struct Side: Codable, Sendable, Hashable {
        public var path: String
        public var runID: String
        public var vantage: String?
        public var startedAt: String?
    }

    public struct ScanDiff: Codable, Sendable, Hashable {
        public var acceptedA: Int
        public var acceptedB: Int
        /// "resolver domain" accepted in B but not in A.
        public var gained: [String]
        /// "resolver domain" accepted in A but not in B, with B's rejection reason when B tested it.
        public var lost: [String]
        public var mtuShifts: [Shift]
        public var syncedA: ScanReport.Synced
        public var syncedB: ScanReport.Synced

        public struct Shift: Codable, Sendable, Hashable {
            public var pair: String
            public var uploadA: Int?
            public var uploadB: Int?
            public var downloadA: Int?
            public var downloadB: Int?
        }
    }

    /// Compares the two runs' reports kind by kind.
    public static func compare(_ a: RunDirectory, _ b: RunDirectory) -> ReportComparison {
        let scansA = a.scanReport, scansB = b.scanReport
        var c = ReportComparison(a: side(a), b: side(b), scan: nil, changes: [], notes: [])
        for p in a.problems { c.notes.append("A \(p)") }
        for p in b.problems { c.notes.append("B \(p)") }
        if let sa = scansA, let sb = scansB {
            let d = diff(sa, sb)
            c.scan = d
            c.changes += d.sentences()
        } else if scansA != nil || scansB != nil {
            c.notes.append("scan: only in \(scansA != nil ? "A" : "B")")
        }
        if let pa = a.pathReport, let pb = b.pathReport { c.changes += pathSentences(pa, pb) }
        if let va = a.verifyReport, let vb = b.verifyReport, va.verdict != vb.verdict || va.engine != vb.engine {
            c.changes.append("verify: \(va.engine) \(va.verdict) → \(vb.engine) \(vb.verdict)\(vb.failure.map { " (\($0.phase): \($0.reason))" } ?? "")")
        }
        if let sa = a.simulateReport?.recommendation, let sb = b.simulateReport?.recommendation, sa.level != sb.level {
            c.changes.append("simulate: recommended level \(sa.level) → \(sb.level) (\(sb.reason))")
        }
        let kindsA = Set(a.reports.map(\.kind)), kindsB = Set(b.reports.map(\.kind))
        for kind in ReportKind.allCases where kind != .scan && kindsA.contains(kind) != kindsB.contains(kind) {
            c.notes.append("\(kind.rawValue): only in \(kindsA.contains(kind) ? "A" : "B")")
        }
        return c
    }

    /// Loss per direction and median RTT of the resolvers both path runs measured. A loss shift is named
    /// when the two Wilson intervals do not overlap (the difference is then beyond sampling noise).
    static func pathSentences(_ a: PathReport, _ b: PathReport) -> [String] {
        var out: [String] = []
        let rowsB = Dictionary(b.resolvers.map { ($0.resolver, $0) }, uniquingKeysWith: { x, _ in x })
        for ra in a.resolvers {
            guard let rb = rowsB[ra.resolver] else {
                out.append("path: \(ra.resolver) not measured in B")
                continue
            }
            for (name, la, lb) in [("up", ra.loss.up, rb.loss.up), ("down", ra.loss.down, rb.loss.down)] {
                guard let x = la.ratio, let y = lb.ratio, let xl = la.ciLow, let xh = la.ciHigh, let yl = lb.ciLow, let yh = lb.ciHigh else { continue }
                if xh < yl || yh < xl {
                    out.append("path: \(ra.resolver) loss \(name) \(HTML.formatFixed(x * 100, decimals: 2)) % → \(HTML.formatFixed(y * 100, decimals: 2)) % (95 % intervals do not overlap)")
                }
            }
            if let x = ra.rttMs.p50, let y = rb.rttMs.p50, abs(y - x) > max(1, 0.2 * x) {
                out.append("path: \(ra.resolver) RTT p50 \(HTML.formatFixed(x, decimals: 2)) → \(HTML.formatFixed(y, decimals: 2)) ms")
            }
        }
        for rb in b.resolvers where !a.resolvers.contains(where: { $0.resolver == rb.resolver }) {
            out.append("path: \(rb.resolver) measured only in B")
        }
        return out
    }

    static func side(_ d: RunDirectory) -> Side {
        let run = d.manifest?.run ?? d.reports.first?.run
        return Side(path: d.path, runID: d.runID, vantage: run?.vantage, startedAt: run?.startedAt)
    }

    static func diff(_ a: ScanReport, _ b: ScanReport) -> ScanDiff {
        func key(_ p: ScanPair) -> String { "\(p.resolver) \(p.domain)" }
        let acceptedA = Dictionary(a.pairs.filter(\.accepted).map { (key($0), $0) }, uniquingKeysWith: { x, _ in x })
        let acceptedB = Dictionary(b.pairs.filter(\.accepted).map { (key($0), $0) }, uniquingKeysWith: { x, _ in x })
        let testedB = Dictionary(b.pairs.map { (key($0), $0) }, uniquingKeysWith: { x, _ in x })
        let gained = acceptedB.keys.filter { acceptedA[$0] == nil }.sorted()
        let lost = acceptedA.keys.filter { acceptedB[$0] == nil }.sorted().map { k in
            testedB[k].map { "\(k) (\($0.reason ?? "rejected"))" } ?? "\(k) (not tested in B)"
        }
        let shifts = acceptedA.keys.filter { acceptedB[$0] != nil }.sorted().compactMap { k -> ScanDiff.Shift? in
            let pa = acceptedA[k]!, pb = acceptedB[k]!
            guard pa.upload?.bytes != pb.upload?.bytes || pa.download?.bytes != pb.download?.bytes else { return nil }
            return .init(pair: k, uploadA: pa.upload?.bytes, uploadB: pb.upload?.bytes,
                         downloadA: pa.download?.bytes, downloadB: pb.download?.bytes)
        }
        return ScanDiff(acceptedA: acceptedA.count, acceptedB: acceptedB.count, gained: gained, lost: lost,
                        mtuShifts: shifts, syncedA: a.synced, syncedB: b.synced)
    }

    public func markdown() -> String {
        var out = ["# Comparison", "",
                   "- A: \(a.runID) (\(a.vantage ?? "?"), \(a.startedAt ?? "?")) — \(a.path)",
                   "- B: \(b.runID) (\(b.vantage ?? "?"), \(b.startedAt ?? "?")) — \(b.path)", ""]
        out.append("## What changed")
        out.append("")
        out += changes.isEmpty ? ["Nothing that both runs measured changed."] : changes.map { "- \($0)" }
        if let scan, !scan.mtuShifts.isEmpty {
            out += ["", "## MTU shifts (pairs accepted in both)", "", "| pair | upload A | upload B | download A | download B |", "|---|---:|---:|---:|---:|"]
            for s in scan.mtuShifts {
                out.append("| \(s.pair) | \(s.uploadA.map(String.init) ?? "-") | \(s.uploadB.map(String.init) ?? "-") | \(s.downloadA.map(String.init) ?? "-") | \(s.downloadB.map(String.init) ?? "-") |")
            }
        }
        if !notes.isEmpty {
            out += ["", "## Not compared", ""] + notes.map { "- \($0)" }
        }
        return out.joined(separator: "\n") + "\n"
    }
}

extension ReportComparison.ScanDiff {
    func sentences() -> [String] {
        var s: [String] = []
        if acceptedA != acceptedB { s.append("scan: accepted pairs \(acceptedA) → \(acceptedB)") }
        if syncedA.upload != syncedB.upload || syncedA.download != syncedB.download {
            s.append("scan: synced MTU upload \(syncedA.upload.map(String.init) ?? "none") → \(syncedB.upload.map(String.init) ?? "none") B, download \(syncedA.download.map(String.init) ?? "none") → \(syncedB.download.map(String.init) ?? "none") B")
        }
        for g in gained.prefix(50) { s.append("scan: gained \(g)") }
        if gained.count > 50 { s.append("scan: gained \(gained.count - 50) more pairs") }
        for l in lost.prefix(50) { s.append("scan: lost \(l)") }
        if lost.count > 50 { s.append("scan: lost \(lost.count - 50) more pairs") }
        for m in mtuShifts.prefix(50) {
            s.append("scan: \(m.pair) upload \(m.uploadA.map(String.init) ?? "-") → \(m.uploadB.map(String.init) ?? "-") B, download \(m.downloadA.map(String.init) ?? "-") → \(m.downloadB.map(String.init) ?? "-") B")
        }
        return s
    }
}
