import Foundation

/// The `--log` file: JSON lines (`docs/IMPAIR.md`). A header line, one line per datagram and
/// direction in the order the relay decided, and a summary line. Lines are built by hand into a
/// buffer written in large chunks, so logging does not cap the relay's rate.
public final class ImpairmentLog {
    public static let schema = "tunnelprobe.impair-log/1"
    private static let chunk = 1 << 18

    private let fd: Int32
    public let path: String
    private var buffer: [UInt8] = []

    /// Creates (truncates) the file; throws a one-line reason when it cannot.
    public init(path: String) throws(ImpairmentConfigError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ImpairmentConfigError("--log", "cannot create \(path): \(String(cString: strerror(errno)))") }
        self.fd = fd
        self.path = path
        buffer.reserveCapacity(Self.chunk + 4096)
    }

    deinit { close() }

    public func header(config: ImpairmentConfig, arguments: [String], startedAt: String) {
        var line = "{\"schema\":\"\(Self.schema)\",\"startedAt\":\"\(startedAt)\",\"seed\":\(config.seed)"
        line += ",\"listen\":\"\(config.listen)\",\"upstream\":\"\(config.upstream)\",\"arguments\":["
        line += arguments.map { "\"\(Self.escaped($0))\"" }.joined(separator: ",") + "]}\n"
        buffer += line.utf8
    }

    /// One datagram's line. `seq` counts the datagrams of its direction from 0; `bytes` is the
    /// datagram as received (the QNAME is written from it).
    public func record(direction: Direction, seq: UInt64, receivedNs: UInt64, peer: String, bytes: UnsafeRawBufferPointer,
                       info: DatagramInfo, verdict: Verdict) {
        append("{\"dir\":\"")
        append(direction == .up ? "up" : "down" as StaticString)
        append("\",\"seq\":")
        append(seq)
        append(",\"tNs\":")
        append(receivedNs)
        append(",\"size\":")
        append(UInt64(info.size))
        append(",\"peer\":\"")
        append(peer)
        append("\"")
        if let id = info.id {
            append(",\"id\":")
            append(UInt64(id))
            append(info.isResponse ? ",\"qr\":1" : ",\"qr\":0" as StaticString)
            if let end = info.questionEnd, let qtype = info.qtype {
                append(",\"qname\":\"")
                DatagramInfo.appendQName(bytes, questionEnd: end, to: &buffer)
                append("\",\"qtype\":")
                append(UInt64(qtype))
            }
        }
        append(",\"action\":\"")
        switch verdict.action {
        case .forward: append("forward")
        case .drop: append("drop")
        case .servfail: append("servfail")
        }
        append("\"")
        if let model = verdict.droppedBy {
            append(",\"by\":\"")
            append(model.rawValue)
            append("\"")
        }
        if verdict.action == .forward {
            append(",\"copies\":")
            append(UInt64(verdict.copies))
            append(",\"delayNs\":")
            append(verdict.departureNs - receivedNs)
            if verdict.queueNs > 0 {
                append(",\"queueNs\":")
                append(verdict.queueNs)
            }
            if let gap = verdict.reorderGap {
                append(",\"reorderGap\":")
                append(UInt64(gap))
            }
            if verdict.truncated { append(",\"truncated\":true") }
        }
        if let state = verdict.geState {
            append(",\"ge\":\"")
            append(state == .good ? "good" : "bad" as StaticString)
            append("\"")
        }
        if let index = verdict.replayIndex {
            append(",\"replay\":")
            append(UInt64(index))
            if verdict.replayWrapped { append(",\"replayWrapped\":true") }
        }
        append("}\n")
        if buffer.count >= Self.chunk { flush() }
    }

    public func summary(_ summary: ImpairmentSummary) {
        buffer += "{\"summary\":\(summary.json)}\n".utf8
        flush()
    }

    public func flush() {
        var offset = 0
        while offset < buffer.count {
            let n = buffer[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                break  // disk full or similar: the summary on stderr still reports the counts
            }
            offset += n
        }
        buffer.removeAll(keepingCapacity: true)
    }

    private var closed = false
    public func close() {
        guard !closed else { return }
        flush()
        closed = true
        _ = Foundation.close(fd)
    }

    /// Literals go straight from the binary's UTF-8 into the buffer.
    @inline(__always) private func append(_ s: StaticString) {
        s.withUTF8Buffer { buffer.append(contentsOf: $0) }
    }

    @inline(__always) private func append(_ s: String) {
        var s = s
        s.withUTF8 { buffer.append(contentsOf: $0) }
    }

    /// Decimal digits straight into the buffer, without an intermediate String.
    private func append(_ value: UInt64) {
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // 32 bytes of scratch, enough for 20 digits
        withUnsafeMutableBytes(of: &digits) { scratch in
            var n = value
            var i = scratch.count
            repeat {
                i -= 1
                scratch[i] = 48 + UInt8(truncatingIfNeeded: n % 10)
                n /= 10
            } while n > 0
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[i...]))
        }
    }

    /// JSON string escaping (RFC 8259 section 7).
    static func escaped(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 }) else { return s }
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}
