import Foundation
import Testing

/// The two layering rules of docs/ARCHITECTURE.md, read from the sources so that a new file cannot
/// break them in silence: only OSLayer talks to the C library directly (`import Glibc`), and Reports
/// and Results import no measuring module and nothing of SwiftNIO (Package.swift's dependencies are
/// checked by scripts/module-graph.sh; this checks what each file really imports).
@Suite struct LayerRuleTests {
    static let sourcesDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// (module, imported module) for every `import` line of every Swift file under Sources.
    static func imports() throws -> [(module: String, file: String, imported: String)] {
        let files = FileManager.default.enumerator(at: sourcesDirectory, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        let line = try NSRegularExpression(pattern: #"^\s*(?:@\w+\s+)*(?:public\s+|internal\s+|package\s+|private\s+|fileprivate\s+)?import\s+(?:(?:struct|class|enum|func|var|let|protocol|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)"#,
                                           options: [.anchorsMatchLines])
        var found: [(String, String, String)] = []
        for file in files {
            let relative = file.path.dropFirst(sourcesDirectory.path.count + 1)
            guard let module = relative.split(separator: "/").first.map(String.init) else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in line.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                if let range = Range(match.range(at: 1), in: text) {
                    found.append((module, String(relative), String(text[range])))
                }
            }
        }
        return found
    }

    @Test func onlyTheOSLayerImportsGlibc() throws {
        let all = try Self.imports()
        #expect(all.contains { $0.module == "OSLayer" && $0.imported == "Glibc" }, "the rule reads no import at all: the path is wrong")
        let offenders = all.filter { $0.imported == "Glibc" && $0.module != "OSLayer" }.map(\.file)
        #expect(offenders.isEmpty, "import Glibc outside OSLayer: \(offenders.joined(separator: ", "))")
    }

    @Test func resultsAndReportsImportNoMeasuringModule() throws {
        // Results: Base and Foundation only (issue 28); Reports also writes files through OSLayer.
        let allowed: [String: Set<String>] = ["Results": ["Foundation", "Base"], "Reports": ["Foundation", "Base", "OSLayer", "Results"]]
        let offenders = try Self.imports().filter { entry in
            guard let permitted = allowed[entry.module] else { return false }
            return !permitted.contains(entry.imported)
        }
            .map { "\($0.file) imports \($0.imported)" }
        #expect(offenders.isEmpty, "\(offenders.joined(separator: "; "))")
    }
}
