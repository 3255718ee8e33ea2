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
