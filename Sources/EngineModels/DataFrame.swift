/// One tunnel frame as an engine sends it at a given MTU: the payload bytes it carries (what an FEC
/// level of that engine groups as one symbol) and the header bytes the engine puts on each.
public struct DataFrame: Sendable, Hashable, Codable {
    public var payload: Int
    public var header: Int

    public init(payload: Int, header: Int) {
        self.payload = payload
        self.header = header
    }
}

extension MasterDnsVPNGoModel {
    /// STREAM_DATA at MTU `mtu` carries `mtu` payload bytes under the 11-byte frame header; upstream
    /// the whole frame is encrypted (the method's nonce and tag on top), downstream answers are not
    /// (internal/vpnproto/builder.go, internal/client/tunnel_query.go, internal/dnsparser/transport.go).
    public func dataFrame(mtu: Int, upload: Bool) -> DataFrame? {
        guard mtu > 0 else { return nil }
        return DataFrame(payload: mtu, header: Self.frameHeader + (upload ? encryption.overhead : 0))
    }
}

extension MasterDnsVPNPythonModel {
    /// STREAM_DATA at MTU `mtu` carries `mtu` payload bytes under its 13-byte header; upstream the
    /// data and the header are encrypted separately, each with the method's expansion; answers are
    /// plain (dns_utils/DnsPacketParser.py).
    public func dataFrame(mtu: Int, upload: Bool) -> DataFrame? {
        guard mtu > 0 else { return nil }
        return DataFrame(payload: mtu, header: Self.maxHeader + (upload ? 2 * encryption.overhead : 0))
    }
}
