public import Base
import OSLayer
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
        guard fd >= 0 else { throw ImpairmentConfigError(.log, "cannot create \(path): \(String(cString: strerror(errno)))") }
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
        // Built in a local array: appends to a stored property of a class pay a dynamic
        // exclusivity check each, which is most of a line's cost.
        var out: [UInt8] = []
        swap(&out, &buffer)
        defer { swap(&out, &buffer) }
        Line.put("{\"dir\":\"", &out)
        Line.put(direction == .up ? "up" : "down" as StaticString, &out)
        Line.put("\",\"seq\":", &out)
        Line.put(seq, &out)
        Line.put(",\"tNs\":", &out)
        Line.put(receivedNs, &out)
        Line.put(",\"size\":", &out)
        Line.put(UInt64(info.size), &out)
        Line.put(",\"peer\":\"", &out)
        Line.put(peer, &out)
        Line.put("\"", &out)
        if let id = info.id {
            Line.put(",\"id\":", &out)
            Line.put(UInt64(id), &out)
            Line.put(info.isResponse ? ",\"qr\":1" : ",\"qr\":0" as StaticString, &out)
            if let end = info.questionEnd, let qtype = info.qtype {
                Line.put(",\"qname\":\"", &out)
                DatagramInfo.appendQName(bytes, questionEnd: end, to: &out)
                Line.put("\",\"qtype\":", &out)
                Line.put(UInt64(qtype), &out)
            }
        }
        Line.put(",\"action\":\"", &out)
        switch verdict.action {
        case .forward: Line.put("forward", &out)
        case .drop: Line.put("drop", &out)
        case .servfail: Line.put("servfail", &out)
        case .refused: Line.put("refused", &out)
        }
        Line.put("\"", &out)
        if let model = verdict.droppedBy {
            Line.put(",\"by\":\"", &out)
            Line.put(model.rawValue, &out)
            Line.put("\"", &out)
        }
        if verdict.action == .forward {
            Line.put(",\"copies\":", &out)
            Line.put(UInt64(verdict.copies), &out)
            Line.put(",\"delayNs\":", &out)
            Line.put(verdict.departureNs - receivedNs, &out)
            if verdict.queueNs > 0 {
                Line.put(",\"queueNs\":", &out)
                Line.put(verdict.queueNs, &out)
            }
            if let gap = verdict.reorderGap {
                Line.put(",\"reorderGap\":", &out)
                Line.put(UInt64(gap), &out)
            }
            if verdict.truncated { Line.put(",\"truncated\":true", &out) }
        }
        if let state = verdict.geState {
            Line.put(",\"ge\":\"", &out)
            Line.put(state == .good ? "good" : "bad" as StaticString, &out)
            Line.put("\"", &out)
        }
        if let index = verdict.replayIndex {
            Line.put(",\"replay\":", &out)
            Line.put(UInt64(index), &out)
            if verdict.replayWrapped { Line.put(",\"replayWrapped\":true", &out) }
        }
        Line.put("}\n", &out)
        if out.count >= Self.chunk { Self.write(fd, &out) }
    }

    public func summary(_ summary: ImpairmentSummary) {
        buffer += "{\"summary\":\(summary.json)}\n".utf8
        flush()
    }

    public func flush() {
        Self.write(fd, &buffer)
    }

    /// Writes all of `bytes` and empties it (keeping its capacity).
    private static func write(_ fd: Int32, _ bytes: inout [UInt8]) {
        // Disk full or similar: the summary on stderr still reports the counts.
        try? SystemCall.writeAll(fd, bytes)
        bytes.removeAll(keepingCapacity: true)
    }

    private var closed = false
    public func close() {
        guard !closed else { return }
        flush()
        closed = true
        _ = Foundation.close(fd)
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

/// Appending JSON pieces to a line under construction.
enum Line {
    /// Literals go straight from the binary's UTF-8 into the buffer.
    @inline(__always) static func put(_ s: StaticString, _ out: inout [UInt8]) {
        s.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    @inline(__always) static func put(_ s: String, _ out: inout [UInt8]) {
        var s = s
        s.withUTF8 { out.append(contentsOf: $0) }
    }

    /// Decimal digits straight into the buffer, without an intermediate String.
    static func put(_ value: UInt64, _ out: inout [UInt8]) {
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // 32 bytes of scratch, enough for 20 digits
        withUnsafeMutableBytes(of: &digits) { scratch in
            var n = value
            var i = scratch.count
            repeat {
                i -= 1
                scratch[i] = 48 + UInt8(truncatingIfNeeded: n % 10)
                n /= 10
            } while n > 0
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[i...]))
        }
    }
}
