import DNSWire

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
        let query: [UInt8]
        do {
            query = try DNSProbeMessage.query(id: id, name: name, type: type, ednsPayloadSize: ednsPayloadSize)
        } catch {
            throw LabError(.invalidName, "cannot ask for \(name): \(error)")
        }
        try NamespaceSocket.send(
            fd,
            query,
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

/// The query a readiness probe sends and what it reads of the reply, both through DNSWire.
enum DNSProbeMessage {
    static func query(id: UInt16, name: String, type: UInt16, ednsPayloadSize: Int?) throws(DNSWireError) -> [UInt8] {
        try DNSMessage.query(id: id, name: name, type: DNSType(type), udpPayloadSize: ednsPayloadSize.map { UInt16(clamping: $0) })
            .serialized()
    }

    /// `nil` unless `bytes` is a well-formed response with this id.
    static func reply(_ bytes: [UInt8], id: UInt16, source: String, port: Int) -> LabDNSReply? {
        guard let message = try? DNSMessage(parsing: bytes), message.header.id == id, message.header.isResponse else { return nil }
        return LabDNSReply(
            source: source,
            sourcePort: port,
            bytes: bytes,
            truncated: message.header.truncated,
            responseCode: Int(message.rcode.rawValue),
            answerCount: message.answers.count
        )
    }
}
