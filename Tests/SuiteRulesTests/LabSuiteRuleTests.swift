import Foundation
import Testing

/// `make check` (`TUNNELPROBE_QUICK_CHECK=1`) leaves out every suite behind a lab gate
/// (`LabGate.isLab`: root, a tool, or an idle machine) through that gate's `.enabled(if: ….runs)`,
/// not through a list of names. A suite that needs the lab but checks its gate only inside its tests
/// (`check()`) would still run in the edit loop; this reads every suite's source and fails on one.
@Suite struct LabSuiteRuleTests {
    /// The gates that need root, the lab, an engine, Chromium or an idle machine
    /// (Tests/TestSupport/TestEnvironment.swift); `LabGate.binary` needs only the debug binary and
    /// runs in `make check`.
    static let labGate = try! NSRegularExpression(
        pattern: #"LabGate\.(lab|root|labWithBinary|tunnelLab|chromium|measurement)\b|LabGate\((\)|tools:|root: true|.*measures: true)"#)
    /// A suite-level condition on a gate's `runs` (a named gate, or a static `runs` of the suite).
    static let enabledByGate = try! NSRegularExpression(pattern: #"\.enabled\(if:[\s\S]{0,160}?\bruns\b"#)

    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    struct Suite: CustomStringConvertible {
        var target: String
        var name: String
        var needsLab: Bool
        var enabledByGate: Bool
        var description: String { "\(target).\(name)" }
    }

    /// Each top-level type of a test file with its source up to the next top-level declaration.
    static func suites() throws -> [Suite] {
        let files = FileManager.default.enumerator(at: testsDirectory, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        let declaration = try NSRegularExpression(pattern: #"^(?:@\w+(?:\(.*\))?\s+)*(?:final\s+)?(?:struct|class|enum|actor)\s+(\w+)"#)
        var suites: [Suite] = []
        for file in files {
            let target = file.deletingLastPathComponent().lastPathComponent
            guard target.hasSuffix("Tests"), target != "SuiteRulesTests" else { continue }
            let lines = try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n")
            var current: (name: String?, text: String) = (nil, "")
            func finish() {
                guard let name = current.name, current.text.contains("@Test") || current.text.contains("@Suite") else { return }
                let range = NSRange(current.text.startIndex..., in: current.text)
                let gated = labGate.firstMatch(in: current.text, range: range) != nil
                let enabled = enabledByGate.firstMatch(in: current.text, range: range) != nil
                suites.append(Suite(target: target, name: name, needsLab: gated, enabledByGate: enabled))
            }
            for line in lines {
                let topLevel = line.first.map { !$0.isWhitespace && $0 != "}" && $0 != "/" && $0 != ")" } ?? false
                if topLevel {
                    let startsType = declaration.firstMatch(in: line, range: NSRange(line.startIndex..., in: line))
                    let attributeOnly = line.hasPrefix("@") && startsType == nil
                    if startsType != nil || attributeOnly || line.hasPrefix("extension ") || line.hasPrefix("import ") {
                        // An attribute line belongs to the type that follows it.
                        if !(current.name == nil && current.text.hasPrefix("@")) {
                            finish()
                            current = (nil, "")
                        }
                        if let match = startsType, let range = Range(match.range(at: 1), in: line) {
                            current.name = String(line[range])
                        }
                    }
                }
                current.text += line + "\n"
            }
            finish()
        }
        return suites
    }

    @Test func everyLabSuiteIsLeftOutOfMakeCheckByItsGate() throws {
        let suites = try Self.suites()
        #expect(suites.count > 50, "found only \(suites.count) suites under \(Self.testsDirectory.path)")
        #expect(suites.contains { $0.needsLab }, "found no lab suite: the gate pattern no longer matches")
        for suite in suites where suite.needsLab {
            #expect(suite.enabledByGate, "\(suite) uses a lab gate but has no `.enabled(if: <gate>.runs)`: make check would run it")
        }
    }

    /// The Makefile names no suites: `make check` must not go back to a list that a renamed suite escapes.
    @Test func theMakefileChoosesNoSuiteByName() throws {
        let makefile = try String(contentsOf: Self.testsDirectory.deletingLastPathComponent().appendingPathComponent("Makefile"),
                                  encoding: .utf8)
        #expect(makefile.range(of: #"--skip[ =]"#, options: .regularExpression) == nil, "make check skips suites by name again")
        #expect(makefile.contains("TUNNELPROBE_QUICK_CHECK=1"))
    }
}
