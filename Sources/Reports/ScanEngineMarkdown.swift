public import Results

extension ScanReport {
    /// `value (SETTING)` for a figure a user types, `N (engine derives it)` for one the engine sets
    /// itself, and the reason when the pair cannot carry the engine.
    static func figureText(_ f: DirectionFigure) -> String {
        guard let value = f.value else { return "unusable: \(f.boundBy.phrase)" }
        return f.userSettable ? "\(value)" : "\(value) (engine sets it)"
    }

    /// Where the file of one engine's export lands in the report directory.
    public static func exportPath(_ engine: Engine, _ file: ExportFile) -> String {
        "exports/\(engine.rawValue)/\(file.name)"
    }

    /// Every engine's export files as (path in the report directory, text).
    public func engineExportFiles() -> [(String, String)] {
        (engines ?? []).flatMap { scan in scan.exports.map { (Self.exportPath(scan.engine, $0), $0.text) } }
    }

    /// The Markdown section "Numbers for your engine": per engine, the synced values where the user
    /// types them and what bound them, then each pair in that engine's units.
    func engineMarkdown() -> [String] {
        guard let engines, !engines.isEmpty else { return [] }
        var out = ["## Numbers for your engine", "",
                   "Computed by each engine's model (docs/ENGINES.md) from what the probes measured: the longest intact query name and the largest intact response of the record type the engine answers with. One configuration serves every resolver, so the synced value is the minimum over the usable pairs.", "",
                   "| engine | upload | setting | download | setting | usable pairs | files |",
                   "|---|---:|---|---:|---|---:|---|"]
        for e in engines {
            let first = e.synced.usable.first
            let up = e.synced.upload.map(String.init) ?? "-"
            let down = e.synced.download.map(String.init) ?? "-"
            let upSetting = first.map { $0.upload.userSettable ? "`\($0.upload.setting)`" : "(engine sets it)" } ?? "-"
            let downSetting = first.map { $0.download.userSettable ? "`\($0.download.setting)`" : "(engine sets it)" } ?? "-"
            let files = e.exports.map { "`\(Self.exportPath(e.engine, $0))`" }.joined(separator: ", ")
            out.append("| \(e.name) | \(up) | \(upSetting) | \(down) | \(downSetting) | \(e.synced.usable.count) of \(e.synced.usable.count + e.synced.rejected.count) | \(files) |")
        }
        out.append("")
        for e in engines {
            let all = e.synced.usable + e.synced.rejected
            guard !all.isEmpty else { continue }
            out.append("### \(e.name)")
            out.append("")
            out.append("Source: \(e.source.repository) at \(e.source.commit.prefix(12)). Download figures are at the synced upload.")
            out.append("")
            out.append("| resolver | domain | upload | up bound by | download | record | down bound by |")
            out.append("|---|---|---:|---|---:|---|---|")
            for p in all.prefix(200) {
                out.append("| \(p.resolver) | \(p.domain) | \(Self.figureText(p.upload)) | \(p.upload.boundBy.phrase) | \(Self.figureText(p.download)) | \(p.download.recordType?.rawValue ?? "-") | \(p.download.boundBy.phrase) |")
            }
            if all.count > 200 { out.append("| ... | | | | | | \(all.count - 200) more in scan.json |") }
            out.append("")
        }
        return out
    }

    /// The HTML table of synced engine figures for the run page.
    func engineHTML() -> String {
        guard let engines, !engines.isEmpty else { return "" }
        let rows = engines.map { e -> [String] in
            let first = e.synced.usable.first
            func setting(_ f: DirectionFigure?) -> String {
                guard let f else { return "–" }
                return f.userSettable ? "<code>\(HTML.escape(f.setting))</code>" : "engine sets it"
            }
            return [HTML.escape(e.name),
                    e.synced.upload.map { "<b>\($0)</b>" } ?? HTML.badge("none", .bad), setting(first?.upload),
                    e.synced.download.map { "<b>\($0)</b>" } ?? HTML.badge("none", .bad), setting(first?.download),
                    "\(e.synced.usable.count) of \(e.synced.usable.count + e.synced.rejected.count)",
                    e.exports.map { "<code>\(HTML.escape(Self.exportPath(e.engine, $0)))</code>" }.joined(separator: "<br>")]
        }
        return "<h3>Numbers for your engine</h3>"
            + HTML.table(["engine", "upload", "setting", "download", "setting", "usable pairs", "files"], rows, numeric: [1, 3],
                         caption: "Each engine's model (docs/ENGINES.md) applied to the measured name length and response size; the synced value is the minimum over usable pairs.")
    }
}
