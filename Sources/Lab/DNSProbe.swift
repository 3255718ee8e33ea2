/// Sends one DNS query over UDP from inside a network namespace without moving this process
/// there (see `NamespaceSocket`), polling a non-blocking socket so no thread waits.
enum DNSProbe {
    static func query(
        namespacePath: String,
        server: String,
        port: Int,
        name: String,
        type: UInt16,
        ednsPayloadSize: Int?,
        timeout: Duration
    ) async throws(LabError) -> LabDNSReply {
        let fd = try NamespaceSocket.udp(namespacePath: namespacePath)
        defer { NamespaceSocket.close(fd) }
        var generator = SystemRandomNumberGenerator()
        let id = UInt16.random(in: .min ... .max, using: &generator)
        try NamespaceSocket.send(
            fd,
            DNSProbeMessage.query(id: id, name: name, type: type, ednsPayloadSize: ednsPayloadSize),
            to: server,
            port: port
        )
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            while let datagram = NamespaceSocket.receive(fd) {
                if let reply = DNSProbeMessage.reply(datagram.bytes, id: id, source: datagram.address, port: datagram.port) {
                    return reply
                }
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        throw LabError(.timedOut, "no DNS reply from \(server):\(port) for \(name) within \(timeout) (from \(namespacePath))")
    }
}

/// The few bytes of RFC 1035 a readiness probe needs: one question, optionally an OPT record
/// (RFC 6891 section 6.1.2), and the reply header. Full parsing lives in DNSWire.
enum DNSProbeMessage {
    static func query(id: UInt16, name: String, type: UInt16, ednsPayloadSize: Int?) -> [UInt8] {
        var bytes: [UInt8] = []
        func append16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xff)] }
        append16(id)
        append16(0x0100)  // RD
        append16(1)
        append16(0)
        append16(0)
        append16(ednsPayloadSize == nil ? 0 : 1)
        for label in name.split(separator: ".") {
            let utf8 = Array(label.utf8.prefix(63))
            bytes.append(UInt8(utf8.count))
            bytes += utf8
        }
        bytes.append(0)
        append16(type)
        append16(1)  // IN
        if let size = ednsPayloadSize {
            bytes.append(0)  // root owner
            append16(41)  // OPT
            append16(UInt16(clamping: size))
            bytes += [0, 0, 0, 0]  // extended RCODE, version, flags
            append16(0)
        }
        return bytes
    }

    /// `nil` unless `bytes` is a response with this id.
    static func reply(_ bytes: [UInt8], id: UInt16, source: String, port: Int) -> LabDNSReply? {
        guard bytes.count >= 12, UInt16(bytes[0]) << 8 | UInt16(bytes[1]) == id, bytes[2] & 0x80 != 0 else { return nil }
        return LabDNSReply(
            source: source,
            sourcePort: port,
            bytes: bytes,
            truncated: bytes[2] & 0x02 != 0,
            responseCode: Int(bytes[3] & 0x0f),
            answerCount: Int(UInt16(bytes[6]) << 8 | UInt16(bytes[7]))
        )
    }
}
