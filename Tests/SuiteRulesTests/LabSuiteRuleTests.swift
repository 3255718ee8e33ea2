import Foundation
import Testing

/// `make check` skips the suites the Makefile's `LAB_SUITES` pattern names. A suite gated on root,
/// the lab, an engine or Chromium that the pattern does not name (a renamed suite) would run in
/// `make check` and skip itself there in silence; a suite the pattern names by mistake would never
/// run in `make check`. This reads every suite's source and the pattern, and fails on either.
@Suite struct LabSuiteRuleTests {
    /// The gates that need root, the lab, an engine or Chromium (Tests/TestSupport/TestEnvironment.swift);
    /// `LabGate.binary` needs only the debug binary and runs in `make check`.
    static let labGate = try! NSRegularExpression(
        pattern: #"LabGate\.(lab|root|labWithBinary|tunnelLab|chromium)\b|LabGate\((\)|tools:|root: true)"#)

    /// Suites that need only the binary but measure timing and loss, so they need the release build
    /// on an otherwise idle machine (the Makefile's `make test`), not `make check`'s debug build.
    static let measurementSuites: Set<String> = ["LabTests.PathRelayAgreementTests"]

    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    struct Suite: CustomStringConvertible {
        var target: String
        var name: String
        var needsLab: Bool
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
                suites.append(Suite(target: target, name: name, needsLab: gated || measurementSuites.contains("\(target).\(name)")))
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

    /// The `LAB_SUITES :=` pattern of the Makefile, as `swift test --skip` reads it.
    static func labPattern() throws -> NSRegularExpression {
        let makefile = try String(contentsOf: testsDirectory.deletingLastPathComponent().appendingPathComponent("Makefile"), encoding: .utf8)
        let line = try #require(makefile.components(separatedBy: "\n").first { $0.hasPrefix("LAB_SUITES :=") })
        return try NSRegularExpression(pattern: String(line.dropFirst("LAB_SUITES :=".count)).trimmingCharacters(in: .whitespaces))
    }

    @Test func everyLabSuiteAndOnlyThoseIsSkippedByMakeCheck() throws {
        let pattern = try Self.labPattern()
        let suites = try Self.suites()
        #expect(suites.count > 50, "found only \(suites.count) suites under \(Self.testsDirectory.path)")
        #expect(suites.contains { $0.needsLab }, "found no lab suite: the gate pattern no longer matches")
        for name in Self.measurementSuites {
            #expect(suites.contains { $0.description == name }, "\(name) is listed as a measurement suite but no longer exists")
        }
        for suite in suites {
            let id = suite.description
            let skipped = pattern.firstMatch(in: id, range: NSRange(id.startIndex..., in: id)) != nil
            #expect(skipped == suite.needsLab, suite.needsLab
                ? "\(id) is gated on root/lab/engine/Chromium but LAB_SUITES does not name it: make check would run it"
                : "\(id) needs no lab but LAB_SUITES names it: make check would never run it")
        }
    }
}
