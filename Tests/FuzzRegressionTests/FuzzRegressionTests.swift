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
}
