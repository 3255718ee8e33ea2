/// Inline SVG charts for the HTML reports. Each chart is one `<svg class="chart" id=...>` element with
/// a `<title>` (what a screen reader says), drawn in a fixed viewBox that scales to the page width.
/// Colours come from the page's CSS classes, so charts follow the light or dark scheme.
public enum SVGChart {
    public struct Bar: Sendable {
        public var label: String
        public var value: Double
        /// Series class 0...3, or -1 for a "bad" bar.
        public var series: Int
        public init(label: String, value: Double, series: Int = 0) {
            self.label = label
            self.value = value
            self.series = series
        }
    }

    static let width = 640.0

    /// Horizontal bars, one row each, with an optional vertical reference line (e.g. the synced MTU).
    public static func bars(id: String, title: String, bars: [Bar], unit: String,
                            reference: (value: Double, label: String)? = nil, maxRows: Int = 60) -> String {
        let shown = Array(bars.prefix(maxRows))
        let rows = Rows(count: shown.count, upper: max(shown.map(\.value).max() ?? 0, reference?.value ?? 0, 1),
                        right: 60, row: 18, labels: shown.map(\.label), values: shown.map { label($0.value) })
        let (left, top, row, height) = (rows.left, rows.top, rows.row, rows.height)
        func x(_ v: Double) -> Double { rows.x(v) }
        var s = rows.header(id: id, title: title)
        for (i, b) in shown.enumerated() {
            let y = rows.y(i)
            s += text(left - 6, y + row * 0.7, rows.fitLabel(b.label), anchor: "end")
            let w = max(0, x(b.value) - left)
            s += "<rect class=\"\(b.series < 0 ? "bad" : "s\(b.series % 4)")\" x=\"\(f(left))\" y=\"\(f(y + 2))\" width=\"\(f(w))\" height=\"\(f(row - 4))\"><title>\(HTML.escape("\(b.label): \(label(b.value)) \(unit)"))</title></rect>"
            s += text(left + w + 4, y + row * 0.7, label(b.value))
        }
        if let reference {
            s += "<line class=\"ref\" x1=\"\(f(x(reference.value)))\" y1=\"\(f(top - 4))\" x2=\"\(f(x(reference.value)))\" y2=\"\(f(height - 24))\"/>"
            let refX = x(reference.value), refLabel = fit(reference.label, width: width / 2)
            s += refX + 4 + textWidth(refLabel) > width - 4 ? text(refX - 4, top - 8, refLabel, anchor: "end") : text(refX + 4, top - 8, refLabel)
        }
        if bars.count > shown.count {
            s += text(width - 8, 16, "first \(shown.count) of \(bars.count)", anchor: "end")
        }
        s += text(width - 8, height - 10, unit, anchor: "end")
        return s + "</svg>"
    }

    public struct Series: Sendable {
        public var name: String
        public var values: [Double]
        public init(name: String, values: [Double]) {
            self.name = name
            self.values = values
        }
    }

    /// Empirical CDFs (a step per sample), one line per series.
    public static func cdf(id: String, title: String, series: [Series], xLabel: String) -> String {
        let all = series.flatMap(\.values).filter(\.isFinite)
        let scale = Axis(upper: max(all.max() ?? 1, 1e-9))
        let left = 44.0, top = 28.0, bottom = 34.0, height = 260.0
        let right = max(16, textWidth(label(scale.upper)) / 2 + 6)
        let plotW = width - left - right, plotH = height - top - bottom
        func x(_ v: Double) -> Double { left + plotW * v / scale.upper }
        func y(_ p: Double) -> Double { top + plotH * (1 - p) }
        var s = open(id: id, title: title, height: height)
        s += text(8, 16, fit(title, width: width - 16), weight: true)
        s += frame(left: left, top: top, width: plotW, height: plotH)
        for t in scale.ticks { s += text(x(t), height - bottom + 14, label(t), anchor: "middle") }
        for p in [0.0, 0.25, 0.5, 0.75, 0.9, 1.0] {
            s += "<line class=\"grid\" x1=\"\(f(left))\" y1=\"\(f(y(p)))\" x2=\"\(f(left + plotW))\" y2=\"\(f(y(p)))\"/>"
            s += text(left - 4, y(p) + 4, label(p), anchor: "end")
        }
        s += text(left + plotW / 2, height - 4, xLabel, anchor: "middle")
        for (i, serie) in series.enumerated() {
            let v = serie.values.filter(\.isFinite).sorted()
            guard !v.isEmpty else { continue }
            // At most ~400 points: a CDF of a million samples looks the same from its quantiles.
            let step = max(1, v.count / 400)
            var d = "M\(f(x(v[0]))),\(f(y(0)))"
            var idx = 0
            while idx < v.count {
                let p = Double(idx + 1) / Double(v.count)
                d += " H\(f(x(v[idx]))) V\(f(y(p)))"
                idx = idx + step < v.count || idx == v.count - 1 ? idx + step : v.count - 1
            }
            s += "<path class=\"line s\(i % 4)\" d=\"\(d)\"><title>\(HTML.escape(serie.name))</title></path>"
            s += legend(i, serie.name, x: left + 8 + Double(i % 3) * 200, y: top + 14 + Double(i / 3) * 14)
        }
        if all.isEmpty { s += text(left + plotW / 2, top + plotH / 2, "no samples", anchor: "middle") }
        return s + "</svg>"
    }

    public struct Column: Sendable {
        public var label: String
        public var value: Double
        public var highlighted: Bool
        public init(label: String, value: Double, highlighted: Bool = false) {
            self.label = label
            self.value = value
            self.highlighted = highlighted
        }
    }

    /// Vertical columns: histograms and time series (loss per interval, bursts highlighted).
    public static func columns(id: String, title: String, columns: [Column], xLabel: String, yLabel: String,
                               labelEvery: Int = 1) -> String {
        let scale = Axis(upper: max(columns.map(\.value).max() ?? 0, 1e-9))
        let left = tickColumn(scale, least: 48), right = 12.0, top = 40.0, bottom = 40.0, height = 252.0
        let plotW = width - left - right, plotH = height - top - bottom
        let slot = plotW / Double(max(columns.count, 1))
        func y(_ v: Double) -> Double { top + plotH * (1 - v / scale.upper) }
        var s = open(id: id, title: title, height: height)
        s += text(8, 16, fit(title, width: width - 16), weight: true)
        s += frame(left: left, top: top, width: plotW, height: plotH)
        for t in scale.ticks {
            s += "<line class=\"grid\" x1=\"\(f(left))\" y1=\"\(f(y(t)))\" x2=\"\(f(left + plotW))\" y2=\"\(f(y(t)))\"/>"
            s += text(left - 4, y(t) + 4, label(t), anchor: "end")
        }
        for (i, c) in columns.enumerated() {
            let x0 = left + Double(i) * slot
            let h = max(0, top + plotH - y(c.value))
            s += "<rect class=\"\(c.highlighted ? "bad" : "s0")\" x=\"\(f(x0 + slot * 0.1))\" y=\"\(f(top + plotH - h))\" width=\"\(f(max(slot * 0.8, 0.5)))\" height=\"\(f(h))\"><title>\(HTML.escape("\(c.label): \(label(c.value))"))</title></rect>"
            if i % max(1, labelEvery) == 0 {
                // Centred under its column: as wide as the columns up to the next label, and never past an edge.
                let centre = x0 + slot / 2
                let room = min(slot * Double(max(1, labelEvery)) - 4, 2 * (width - 2 - centre), 2 * (centre - 2))
                s += text(centre, top + plotH + 13, fit(c.label, width: max(room, 12)), anchor: "middle")
            }
        }
        s += text(left + plotW / 2, height - 6, xLabel, anchor: "middle")
        s += text(left, top - 10, yLabel)
        if columns.isEmpty { s += text(left + plotW / 2, top + plotH / 2, "no samples", anchor: "middle") }
        return s + "</svg>"
    }

    public struct Point: Sendable {
        public var label: String
        public var x: Double
        public var y: Double
        public var highlighted: Bool
        public init(label: String, x: Double, y: Double, highlighted: Bool = false) {
            self.label = label
            self.x = x
            self.y = y
            self.highlighted = highlighted
        }
    }

    /// Labelled points, e.g. FEC levels: overhead across, residual loss up.
    public static func scatter(id: String, title: String, points: [Point], xLabel: String, yLabel: String) -> String {
        let xs = Axis(upper: max(points.map(\.x).max() ?? 0, 1e-9))
        let ys = Axis(upper: max(points.map(\.y).max() ?? 0, 1e-9))
        let left = tickColumn(ys, least: 56), top = 40.0, bottom = 38.0, height = 272.0
        let right = max(24, textWidth(label(xs.upper)) / 2 + 6)
        let plotW = width - left - right, plotH = height - top - bottom
        func x(_ v: Double) -> Double { left + plotW * v / xs.upper }
        func y(_ v: Double) -> Double { top + plotH * (1 - v / ys.upper) }
        var s = open(id: id, title: title, height: height)
        s += text(8, 16, fit(title, width: width - 16), weight: true)
        s += frame(left: left, top: top, width: plotW, height: plotH)
        for t in xs.ticks { s += text(x(t), top + plotH + 14, label(t), anchor: "middle") }
        for t in ys.ticks {
            s += "<line class=\"grid\" x1=\"\(f(left))\" y1=\"\(f(y(t)))\" x2=\"\(f(left + plotW))\" y2=\"\(f(y(t)))\"/>"
            s += text(left - 4, y(t) + 4, label(t), anchor: "end")
        }
        for (i, p) in points.enumerated() {
            s += "<circle class=\"\(p.highlighted ? "bad" : "s\(i % 4)")\" cx=\"\(f(x(p.x)))\" cy=\"\(f(y(p.y)))\" r=\"5\"><title>\(HTML.escape("\(p.label): \(label(p.x)), \(label(p.y))"))</title></circle>"
            // A label that would run past the right edge is drawn to the point's left.
            let name = fit(p.label, width: plotW / 2)
            s += x(p.x) + 7 + textWidth(name) > width - 4 ? text(x(p.x) - 7, y(p.y) - 6, name, anchor: "end") : text(x(p.x) + 7, y(p.y) - 6, name)
        }
        s += text(left + plotW / 2, height - 4, xLabel, anchor: "middle")
        s += text(left, top - 10, yLabel)
        return s + "</svg>"
    }

    public struct Span: Sendable {
        public var name: String
        public var start: Double
        public var duration: Double
        public var ok: Bool
        public init(name: String, start: Double, duration: Double, ok: Bool) {
            self.name = name
            self.start = start
            self.duration = duration
            self.ok = ok
        }
    }

    /// A timeline of phases (Gantt rows): when each started and how long it took.
    public static func timeline(id: String, title: String, spans: [Span], unit: String = "ms") -> String {
        let rows = Rows(count: spans.count, upper: max(spans.map { $0.start + $0.duration }.max() ?? 0, 1), right: 70, row: 20,
                        labels: spans.map(\.name), values: spans.map { label($0.duration) })
        let (left, row, height) = (rows.left, rows.row, rows.height)
        func x(_ v: Double) -> Double { rows.x(v) }
        var s = rows.header(id: id, title: title)
        for (i, span) in spans.enumerated() {
            let y = rows.y(i)
            s += text(left - 6, y + row * 0.7, rows.fitLabel(span.name), anchor: "end")
            let w = max(1.5, x(span.start + span.duration) - x(span.start))
            s += "<rect class=\"\(span.ok ? "s2" : "bad")\" x=\"\(f(x(span.start)))\" y=\"\(f(y + 3))\" width=\"\(f(w))\" height=\"\(f(row - 6))\"><title>\(HTML.escape("\(span.name): \(label(span.duration)) \(unit)\(span.ok ? "" : ", failed")"))</title></rect>"
            s += text(x(span.start) + w + 4, y + row * 0.7, label(span.duration))
        }
        s += text(width - 8, height - 10, unit, anchor: "end")
        return s + "</svg>"
    }

    // MARK: drawing helpers

    /// The layout shared by charts with one labelled row per item and a value axis across.
    /// The label column is as wide as the longest label (at most 55 % of the chart; a longer label is
    /// shortened to fit, whole in the bar's tooltip), the right margin as wide as the longest value.
    struct Rows {
        let top = 26.0
        let left: Double
        let row: Double
        let right: Double
        let height: Double
        let scale: Axis

        init(count: Int, upper: Double, right: Double, row: Double, labels: [String], values: [String]) {
            self.row = row
            scale = Axis(upper: upper)
            let widest = labels.map(SVGChart.textWidth).max() ?? 0
            left = min(max(widest + 14, 60), SVGChart.width * 0.55)
            // The value after the longest bar, and the last tick label centred on the right edge.
            let tail = max(values.map(SVGChart.textWidth).max() ?? 0, SVGChart.textWidth(SVGChart.label(scale.upper)) / 2)
            self.right = max(right, tail + 12)
            height = top + Double(max(count, 1)) * row + 30
        }

        /// A row's label, shortened only when it is wider than the column can be.
        func fitLabel(_ label: String) -> String { SVGChart.fit(label, width: left - 10) }

        func x(_ v: Double) -> Double { left + (SVGChart.width - left - right) * v / scale.upper }
        func y(_ index: Int) -> Double { top + Double(index) * row }

        /// The opening tag, the title and the vertical grid with its tick labels.
        func header(id: String, title: String) -> String {
            var s = open(id: id, title: title, height: height) + text(8, 16, SVGChart.fit(title, width: SVGChart.width - 16), weight: true)
            for t in scale.ticks {
                s += "<line class=\"grid\" x1=\"\(f(x(t)))\" y1=\"\(f(top))\" x2=\"\(f(x(t)))\" y2=\"\(f(height - 24))\"/>"
                s += text(x(t), height - 10, label(t), anchor: "middle")
            }
            return s
        }
    }

    /// Axis bounds rounded up to 1, 2 or 5 times a power of ten, with four or five ticks.
    struct Axis {
        var upper: Double
        var ticks: [Double]

        init(upper raw: Double) {
            let target = raw > 0 && raw.isFinite ? raw : 1
            // The smallest power of ten that covers the range in five steps, then 2 or 5 times a
            // tenth of it if that covers it too.
            var step = 1.0
            while step * 5 < target { step *= 10 }
            while step / 10 * 5 >= target { step /= 10 }
            for candidate in [step / 5, step / 2] where candidate * 5 >= target {
                step = candidate
                break
            }
            // A step that underflowed (a hostile file's 1e-320) has no whole count: one step of 1.
            if !(step > 0) || !(target / step).isFinite { step = target > 0 && target.isFinite ? target : 1 }
            let count = max(1, Int((target / step).rounded(.up)))
            upper = step * Double(count)
            ticks = (0...count).map { Double($0) * step }
        }
    }

    static func open(id: String, title: String, height: Double) -> String {
        "<svg class=\"chart\" id=\"\(HTML.escape(id))\" role=\"img\" aria-label=\"\(HTML.escape(title))\" viewBox=\"0 0 \(f(width)) \(f(height))\" xmlns=\"http://www.w3.org/2000/svg\"><title>\(HTML.escape(title))</title>"
    }

    static func frame(left: Double, top: Double, width: Double, height: Double) -> String {
        "<line class=\"axis\" x1=\"\(f(left))\" y1=\"\(f(top + height))\" x2=\"\(f(left + width))\" y2=\"\(f(top + height))\"/>"
            + "<line class=\"axis\" x1=\"\(f(left))\" y1=\"\(f(top))\" x2=\"\(f(left))\" y2=\"\(f(top + height))\"/>"
    }

    static func legend(_ series: Int, _ name: String, x: Double, y: Double) -> String {
        "<rect class=\"s\(series % 4)\" x=\"\(f(x))\" y=\"\(f(y - 8))\" width=\"10\" height=\"10\"/>" + text(x + 14, y + 1, fit(name, width: 180))
    }

    static func text(_ x: Double, _ y: Double, _ content: String, anchor: String = "start", weight: Bool = false) -> String {
        "<text x=\"\(f(x))\" y=\"\(f(y))\"\(anchor == "start" ? "" : " text-anchor=\"\(anchor)\"")\(weight ? " font-weight=\"600\"" : "")>\(HTML.escape(content))</text>"
    }

    /// The width of `s` in the charts' 12 px system-ui, estimated on the wide side per character
    /// (BrowserTests measures the real boxes in Chromium): narrow punctuation, digits and lower case,
    /// capitals and m/w, anything beyond ASCII as a full em.
    static func textWidth(_ s: String) -> Double {
        var w = 0.0
        for c in s.unicodeScalars {
            switch c {
            case " ", ".", ",", ":", ";", "'", "|", "!", "i", "j", "l", "I", "(", ")", "[", "]", "/", "f", "t", "r": w += 4.2
            case "m", "w", "M", "W", "%", "@": w += 11
            case "A"..."Z", "+", "=", "<", ">", "~", "_", "#", "&": w += 8.6
            case _ where c.value < 0x80: w += 7.2
            default: w += 12
            }
        }
        return w
    }

    /// `s` whole when it fits `width`, else shortened with an ellipsis until it does.
    static func fit(_ s: String, width: Double) -> String {
        if textWidth(s) <= width { return s }
        var chars = Array(s)
        while !chars.isEmpty, textWidth(String(chars)) + 12 > width { chars.removeLast() }
        return String(chars) + "…"
    }

    /// A left margin wide enough for the value axis's tick labels.
    static func tickColumn(_ axis: Axis, least: Double) -> Double {
        max(least, (axis.ticks.map { textWidth(label($0)) }.max() ?? 0) + 12)
    }

    /// Coordinates with one decimal: enough for a 640-wide viewBox, and stable in golden files.
    static func f(_ v: Double) -> String { HTML.formatFixed(v.isFinite ? v : 0, decimals: 1) }

    /// A tick or value label: integers plainly, small numbers with the decimals they need.
    static func label(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e12 { return String(Int(v)) }
        if abs(v) >= 100 { return HTML.formatFixed(v, decimals: 0) }
        if abs(v) >= 1 { return HTML.formatFixed(v, decimals: 1) }
        if abs(v) >= 0.01 { return HTML.formatFixed(v, decimals: 3) }
        return HTML.formatFixed(v, decimals: 5)
    }
}
