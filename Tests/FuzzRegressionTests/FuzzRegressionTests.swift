import Foundation
import FuzzEntries
import Testing
import TestSupport

/// Every input the fuzz targets start from (Fuzz/Corpus/<target>) and every input that once crashed
/// one (Fuzz/Regressions/<target>, one file per crash, named after what it broke) goes through the
/// same entry as under libFuzzer. A regression that comes back crashes this test process, which
/// fails the run; a hang is caught by the time limit.
@Suite struct FuzzRegressionTests {
    static func inputs(_ entry: FuzzEntry) -> [URL] {
        ["Corpus", "Regressions"].flatMap { folder -> [URL] in
            let directory = TestEnvironment.packageRoot.appendingPathComponent("Fuzz/\(folder)/\(entry.rawValue)")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return names.sorted().filter { !$0.hasPrefix(".") }.map { directory.appendingPathComponent($0) }
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: FuzzEntry.allCases)
    func savedInputsParseOrFailCleanly(entry: FuzzEntry) throws {
        let files = Self.inputs(entry)
        #expect(!files.isEmpty, "Fuzz/Corpus/\(entry.rawValue) holds the seed inputs")
        for file in files {
            entry.run(Array(try Data(contentsOf: file)))
        }
    }

    /// Issue 27: an edited report with out-of-range numbers trapped `report render`. Every report
    /// kind's seed (Fuzz/Corpus/report/<kind>.json) is rendered with every number at each extreme
    /// at once, with each number alone at an extreme, and in seeded variants where a tenth of the
    /// numbers are (`ReportExtremes`): the page and the Markdown come out, or the file is named as
    /// unreadable; a trap kills this process and fails the run.
    @Test(.timeLimit(.minutes(2))) func everyReportKindRendersExtremeNumbersWithoutATrap() throws {
        let directory = TestEnvironment.packageRoot.appendingPathComponent("Fuzz/Corpus/report")
        for kind in ["scan", "path", "trace", "simulate", "verify", "resilience", "rank", "monitor"] {
            let bytes = Array(try Data(contentsOf: directory.appendingPathComponent("\(kind).json")))
            let numbers = ReportExtremes.numberRanges(bytes).count
            #expect(numbers > 10, "\(kind).json holds \(numbers) numbers")
            for v in ReportExtremes.values.indices {
                FuzzEntry.render(ReportExtremes.replacing(bytes) { _ in v })
            }
            for n in 0..<numbers {
                FuzzEntry.render(ReportExtremes.replacing(bytes) { $0 == n ? n : nil })
            }
            let seed = UInt64(kind.utf8.count) &* 0x2700_0000 &+ 27
            for i in 0..<60 {
                FuzzEntry.render(ReportExtremes.seeded(bytes, seed: seed &+ UInt64(i), share: 0.1))
            }
            print("\(kind).json: \(numbers) numbers, each alone and all at once at \(ReportExtremes.values.count) extremes, 60 variants from seed \(seed)")
        }
    }
}

