/// Text a program wrote for a terminal, made plain. MasterDnsVPN's Python edition colours every log
/// line (loguru with `colorize=True`, dns_utils/utils.py getLogger), also when its output goes to a
/// file, so its words reach a report only through this.
public enum TerminalText {
    /// `text` without its ECMA-48 escape sequences: CSI sequences (ESC `[`, parameter bytes
    /// 0x30-0x3F, intermediate bytes 0x20-0x2F, one final byte 0x40-0x7E; ECMA-48 5.4) and
    /// two-character escapes (ESC and one byte 0x40-0x5F). Total: an unfinished sequence at the end
    /// is dropped, every other character kept.
    public static func plain(_ text: String) -> String {
        guard text.unicodeScalars.contains("\u{1B}") else { return text }
        var out = String.UnicodeScalarView()
        var scalars = text.unicodeScalars.makeIterator()
        // A scalar read ahead that still has to be looked at (the end of a sequence, or a new ESC).
        var pending: Unicode.Scalar?
        while let scalar = pending ?? scalars.next() {
            pending = nil
            guard scalar == "\u{1B}" else {
                out.append(scalar)
                continue
            }
            guard let next = scalars.next() else { break }
            if next == "[" {
                // Parameters and intermediates up to the final byte; anything else ends the sequence
                // there and is looked at again.
                while let byte = scalars.next() {
                    if (0x40...0x7E).contains(byte.value) { break }
                    if !(0x20...0x3F).contains(byte.value) {
                        pending = byte
                        break
                    }
                }
            } else if !(0x40...0x5F).contains(next.value) {
                pending = next
            }
        }
        return String(out)
    }
}
