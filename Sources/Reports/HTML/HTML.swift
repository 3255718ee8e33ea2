/// Small helpers for writing self-contained HTML by hand: escaping, tables, the page shell.
///
/// Pages carry their CSS inline and no scripts at all, so a report opens offline, from a file, on a
/// phone, and nothing in it can fetch from the network.
public enum HTML {
    /// Escapes text for element content and attribute values.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// A table; cells are already-escaped HTML. Columns listed in `numeric` are right-aligned.
    public static func table(_ header: [String], _ rows: [[String]], numeric: Set<Int> = [], caption: String? = nil) -> String {
        var out = "<div class=\"scroll\"><table>"
        if let caption { out += "<caption>\(escape(caption))</caption>" }
        out += "<thead><tr>"
        for (i, h) in header.enumerated() { out += "<th\(numeric.contains(i) ? " class=\"num\"" : "")>\(escape(h))</th>" }
        out += "</tr></thead><tbody>"
        for row in rows {
            out += "<tr>"
            for (i, cell) in row.enumerated() { out += "<td\(numeric.contains(i) ? " class=\"num\"" : "")>\(cell)</td>" }
            out += "</tr>"
        }
        return out + "</tbody></table></div>"
    }

    /// A definition list of facts: label -> already-escaped HTML.
    public static func facts(_ items: [(String, String)]) -> String {
        "<dl class=\"facts\">" + items.map { "<dt>\(escape($0.0))</dt><dd>\($0.1)</dd>" }.joined() + "</dl>"
    }

    /// A coloured verdict badge: ok, bad or neutral.
    public static func badge(_ text: String, _ tone: Tone) -> String {
        "<span class=\"badge \(tone.rawValue)\">\(escape(text))</span>"
    }

    public enum Tone: String, Sendable {
        case ok, bad, warn, neutral
    }

    /// A number with a fixed count of decimals, or an en dash when there is none.
    public static func number(_ value: Double?, decimals: Int = 1) -> String {
        guard let value, value.isFinite else { return "–" }
        return formatFixed(value, decimals: decimals)
    }

    /// Formats without Foundation so renderings are identical on every platform.
    static func formatFixed(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "–" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        // Past 2^53 a Double has no fraction left to print and may not fit an Int (a corrupt or
        // hostile report): its own shortest form, which every platform prints alike.
        guard abs(value) * scale < 9.0e15 else { return value.description }
        let rounded = (value * scale).rounded() / scale
        if decimals == 0 { return String(Int(rounded)) }
        let negative = rounded < 0
        let magnitude = abs(rounded)
        let whole = Int(magnitude)
        let fraction = Int(((magnitude - Double(whole)) * scale).rounded())
        var digits = String(fraction)
        while digits.count < decimals { digits = "0" + digits }
        return (negative ? "-" : "") + "\(whole).\(digits)"
    }

    /// The page shell: title, inline style, the body.
    public static func page(title: String, body: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
        <title>\(escape(title))</title>
        <style>\(style)</style>
        </head>
        <body>
        \(body)
        </body>
        </html>

        """
    }

    static let style = """
    :root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#fff;--card:#f6f8fa;--line:#d0d7de;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--accent:#0969da;--accent2:#8250df}
    @media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--card:#161b22;--line:#30363d;--ok:#3fb950;--bad:#f85149;--warn:#d29922;--accent:#4493f8;--accent2:#ab7df8}}
    body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:980px;padding:12px}
    h1{font-size:1.4em;margin:.4em 0}h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid var(--line);padding-bottom:.2em}h3{font-size:1em;margin:1em 0 .3em}
    a{color:var(--accent)}.muted{color:var(--muted)}.scroll{overflow-x:auto}
    table{border-collapse:collapse;margin:.4em 0;font-size:.92em}th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top}th{background:var(--card)}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
    caption{text-align:left;color:var(--muted);padding-bottom:2px}
    .facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:.4em 0}.facts dt{color:var(--muted)}.facts dd{margin:0}
    .badge{display:inline-block;border-radius:10px;padding:0 8px;font-weight:600;font-size:.9em}.badge.ok{background:var(--ok);color:#fff}.badge.bad{background:var(--bad);color:#fff}.badge.warn{background:var(--warn);color:#fff}.badge.neutral{background:var(--line)}
    .notice{border-left:4px solid var(--warn);background:var(--card);padding:6px 10px;margin:.6em 0}.notice.bad{border-color:var(--bad)}
    figure{margin:.6em 0}figcaption{color:var(--muted);font-size:.88em}
    svg.chart{width:100%;height:auto;max-width:900px;background:var(--card);border:1px solid var(--line);border-radius:4px}
    svg.chart text{fill:var(--fg);font:12px system-ui,sans-serif}svg.chart .axis{stroke:var(--muted);stroke-width:1}svg.chart .grid{stroke:var(--line);stroke-width:1}
    svg.chart .s0{fill:var(--accent);stroke:var(--accent)}svg.chart .s1{fill:var(--accent2);stroke:var(--accent2)}svg.chart .s2{fill:var(--ok);stroke:var(--ok)}svg.chart .s3{fill:var(--warn);stroke:var(--warn)}
    svg.chart .bad{fill:var(--bad);stroke:var(--bad)}svg.chart .line{fill:none;stroke-width:2}svg.chart .ref{stroke:var(--bad);stroke-width:2;stroke-dasharray:5 3}svg.chart .band{fill:var(--bad);opacity:.18;stroke:none}
    nav.stages a{margin-right:10px}
    """
}
