import NIOCore

/// The client-facing socket: every datagram is an `up` arrival.
final class ListenHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let core: RelayCore

    init(core: RelayCore) { self.core = core }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        core.clientDatagram(unwrapInboundIn(data))
    }

    /// Writes are batched per read burst: one flush (one `sendmmsg`) per socket.
    func channelReadComplete(context: ChannelHandlerContext) {
        core.flushDirty()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A send to a client that failed (ICMP unreachable reported back): one datagram lost.
        core.sendError(.down)
    }
}

/// One client's upstream socket: every datagram is a `down` arrival for that client.
final class UpstreamHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let core: RelayCore
    private let mapping: Mapping

    init(core: RelayCore, mapping: Mapping) {
        self.core = core
        self.mapping = mapping
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        core.upstreamDatagram(unwrapInboundIn(data), mapping: mapping)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        core.flushDirty()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        core.sendError(.up)
    }
}
