import ArgumentParser
import Foundation
import ProbeClient
import Reports
import Results

struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Render, compare and merge run reports.",
        subcommands: [Render.self, Compare.self, Presets.self, Merge.self]
    )

    /// A run directory given as the directory or as one of the JSON files in it.
    static func runDirectory(_ argument: String) -> String {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: argument, isDirectory: &isDir), !isDir.boolValue {
            return (argument as NSString).deletingLastPathComponent.isEmpty ? "." : (argument as NSString).deletingLastPathComponent
        }
        return argument
    }

    static func load(_ argument: String) throws -> RunDirectory {
        let path = runDirectory(argument)
        do { return try RunDirectory.load(path) } catch { throw fail("\(error)", Exit.badInput) }
    }

    struct Render: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "render",
            abstract: "Write index.html and the Markdown reports of a run directory from its JSON.",
            discussion: """
            Renders what it can: a missing or corrupt JSON file is named at the top of the page and on
            stderr, and the rest is still rendered. Also rewrites the runs index of the parent directory.
            Exits 1 when something could not be rendered.

            Example:
              tunnelprobe report render reports/20261121-191500-scan-3f9a
            """
        )

        @Argument(help: "Run directories (or a JSON file inside one).")
        var directories: [String]

        @Flag(help: "Do not rewrite the parent directory's index.html.")
        var noIndex = false

        @OptionGroup var common: CommonOptions

        func run() throws {
            var problems = 0
            var roots = Set<String>()
            for argument in directories {
                let dir = try ReportCommand.load(argument)
                do { try dir.render() } catch { throw fail("\(error)", Exit.environment) }
                for p in dir.problems { printErr("tunnelprobe: \(dir.path): \(p)") }
                problems += dir.problems.count
                roots.insert((URL(fileURLWithPath: dir.path).standardizedFileURL.path as NSString).deletingLastPathComponent)
                if !common.quiet, !common.json { printOut("\(dir.path)/index.html (\(dir.reports.count) report(s), \(dir.problems.count) problem(s))") }
            }
            if !noIndex {
                for root in roots.sorted() {
                    do { try RunIndex.write(root: root) } catch { throw fail("\(error)", Exit.environment) }
                }
            }
            if problems > 0 { throw Exit.checksFailed }
        }
    }

    struct Compare: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "compare",
            abstract: "Say what changed from run A to run B: resolvers gained or lost, MTU and loss shifts, verdicts.",
            discussion: """
            Example:
              tunnelprobe report compare reports/last-week reports/today
            """
        )

        @Argument(help: "The earlier run directory.")
        var a: String

        @Argument(help: "The later run directory.")
        var b: String

        @Option(help: "Also write compare.json and compare.md into this directory.")
        var out: String?

        @OptionGroup var common: CommonOptions

        func run() throws {
            let comparison = ReportComparison.compare(try ReportCommand.load(a), try ReportCommand.load(b))
            let json: String
            do { json = try ReportWriter.json(comparison) } catch { throw fail("cannot encode: \(error)", Exit.environment) }
            if let out {
                do { try ReportWriter.write([("compare.json", json), ("compare.md", comparison.markdown())], to: out) } catch {
                    throw fail("\(error)", Exit.environment)
                }
            }
            printOut(common.json ? json : comparison.markdown(), terminator: "")
        }
    }

    struct Presets: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "presets",
            abstract: "Lay the FEC levels of several simulate runs (one per path) side by side, with each path's recommendation.",
            discussion: """
            Each argument is a run directory of `simulate` (or its simulate.json), optionally named
            NAME=DIR. The table has one column per path for each metric of the recommendation rule:
            residual loss with and without ARQ, total and longest stall, in-order delay p99, goodput
            and overhead; the figures are the runs' own. Writes presets.json, presets.md and
            presets.html with --out.

            Example:
              tunnelprobe report presets "1% random=reports/sim-a" "5% bursts=reports/sim-b" --out reports/presets
            """
        )

        @Argument(help: "Simulate run directories, each optionally as NAME=DIR.")
        var runs: [String]

        @Option(help: "Write presets.json, presets.md and presets.html into this directory.")
        var out: String?

        @OptionGroup var common: CommonOptions

        func run() throws {
            var named: [(name: String, directory: RunDirectory)] = []
            for argument in runs {
                var name: String?
                var path = argument
                if let eq = argument.firstIndex(of: "="), !FileManager.default.fileExists(atPath: argument) {
                    name = String(argument[..<eq])
                    path = String(argument[argument.index(after: eq)...])
                }
                let dir = try ReportCommand.load(path)
                named.append((name ?? URL(fileURLWithPath: dir.path).lastPathComponent, dir))
            }
            let comparison: PresetComparison
            do { comparison = try PresetComparison.compare(named) } catch { throw fail("\(error)", Exit.badInput) }
            let json: String
            do { json = try ReportWriter.json(comparison) } catch { throw fail("cannot encode: \(error)", Exit.environment) }
            if let out {
                let page = HTML.page(title: "FEC levels on \(comparison.paths.count) path(s)", body: comparison.html())
                do { try ReportWriter.write([("presets.json", json), ("presets.md", comparison.markdown()), ("presets.html", page)], to: out) } catch {
                    throw fail("\(error)", Exit.environment)
                }
            }
            printOut(common.json ? json : comparison.markdown(), terminator: "")
        }
    }

    struct Merge: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "merge",
            abstract: "Merge scans from several vantage points into one scan report; each pair keeps where it was measured.",
            discussion: """
            Example:
              tunnelprobe report merge reports/scan-tehran reports/scan-mashhad --out reports/merged
            """
        )

        @Argument(help: "Run directories holding scan.json (at least two).")
        var directories: [String]

        @Option(help: "Report directory (default reports/<run-id>).")
        var out: String?

        @OptionGroup var common: CommonOptions

        func validate() throws {
            guard directories.count >= 2 else { throw ValidationError("merge needs at least two run directories") }
        }

        func run() throws {
            var scans: [ScanReport] = []
            var sweeps: [SweepShardMerge.Part] = []
            for argument in directories {
                let dir = try ReportCommand.load(argument)
                guard let scan = dir.scanReport else {
                    throw fail("\(dir.path): no readable scan.json\(dir.problems.isEmpty ? "" : " (\(dir.problems.joined(separator: "; ")))")", Exit.badInput)
                }
                scans.append(scan)
                if let part = SweepReport.shardPart(directory: dir.path) { sweeps.append(part) }
            }
            let id = ReportWriter.runID(kind: "merge")
            let run = RunInfo(id: id, version: toolVersion, commandLine: CommandContext.current.commandLine,
                              vantage: scans.map(\.run.vantage).joined(separator: ", "), seed: scans[0].run.seed,
                              startedAt: ReportWriter.timestamp(), finishedAt: ReportWriter.timestamp())
            let merged: ScanReport
            do { merged = try ScanReport.merged(scans, run: run) } catch { throw fail("\(error)", Exit.badInput) }
            let dir = out ?? "reports/\(id)"
            var joined: SweepShardMerge.Merged?
            if !sweeps.isEmpty, sweeps.count == scans.count {
                do { joined = try SweepShardMerge.merge(sweeps) } catch { throw fail("\(error)", Exit.badInput) }
            }
            do {
                let json = try ReportWriter.json(merged)
                var files = [("scan.json", json), ("scan.md", merged.markdown())] + merged.engineExportFiles()
                // Sweeps (every input has sweep.json): their answering sets joined, and what the
                // merged scan accepted, as `sweep` writes them.
                if let joined {
                    let accepted = SweepReport.acceptedAddresses(merged.pairs)
                    let sweepJSON = try ReportWriter.json(joined)
                    files += [("sweep.json", sweepJSON),
                              ("answering.txt", joined.answering.map { $0 + "\n" }.joined()),
                              ("accepted.txt", SweepReport.addressLines(accepted))]
                    if !joined.missingShards.isEmpty, !common.quiet {
                        printOut("warning: shards \(joined.missingShards.map(String.init).joined(separator: ", ")) of \(joined.shardCount) are missing")
                    }
                }
                try ReportWriter.write(files, to: dir)
                try RunDirectory.load(dir).render()
                if common.json { printOut(json, terminator: "") }
            } catch {
                throw fail("\(error)", Exit.environment)
            }
            if !common.json, !common.quiet {
                printOut("merged \(scans.count) scans (\(merged.summary.accepted) of \(merged.summary.pairs) pairs accepted) into \(dir)")
            }
        }
    }
}
