import Base
import Capture

/// DNS over TCP (RFC 7766, two-byte length prefix per message, RFC 1035 section 4.2.2) for streams whose
/// segments arrive in order. A gap or an out-of-order segment drops what the stream had buffered and
/// resynchronises on the next segment that starts a message; skipped segments are counted. Bounded: at
/// most `maxStreams` streams of at most 64 KiB + 2 bytes each.
struct TCPStreams {
    private struct FlowKey: Hashable {
        var source: IPAddress
        var destination: IPAddress
        var sourcePort: UInt16
        var destinationPort: UInt16
    }

    private struct Flow {
        var next: UInt32
        var buffer: [UInt8] = []
    }

    let maxStreams = 4096
    private var flows: [FlowKey: Flow] = [:]
    private(set) var skipped = 0

    mutating func segment(_ h: PacketHeader, _ payload: UnsafeRawBufferPointer, _ deliver: (UnsafeRawBufferPointer) -> Void) {
        let key = FlowKey(source: h.source, destination: h.destination, sourcePort: h.sourcePort, destinationPort: h.destinationPort)
        let syn = h.tcpFlags & 0x02 != 0, fin = h.tcpFlags & 0x01 != 0, rst = h.tcpFlags & 0x04 != 0
        if syn {
            flows[key] = Flow(next: h.tcpSequence &+ 1)
            return
        }
        if payload.isEmpty {
            if fin || rst { flows[key] = nil }
            return
        }
        var flow: Flow
        if let known = flows[key] {
            flow = known
            if h.tcpSequence != flow.next {
                // Retransmission of data already taken, or a gap: either way this segment is not taken.
                skipped += 1
                if Int32(bitPattern: h.tcpSequence &- flow.next) > 0 { flow.buffer.removeAll() ; flow.next = h.tcpSequence }
                else { return }
            }
        } else {
            if flows.count >= maxStreams, let victim = flows.keys.first { flows[victim] = nil }
            flow = Flow(next: h.tcpSequence)  // the capture began mid-stream: assume a message starts here
        }
        flow.buffer.append(contentsOf: payload)
        flow.next = h.tcpSequence &+ UInt32(truncatingIfNeeded: payload.count)
        var start = 0
        while flow.buffer.count - start >= 2 {
            let length = Int(flow.buffer[start]) << 8 | Int(flow.buffer[start + 1])
            guard flow.buffer.count - start - 2 >= length else { break }
            flow.buffer.withUnsafeBytes { all in deliver(UnsafeRawBufferPointer(rebasing: all[(start + 2)..<(start + 2 + length)])) }
            start += 2 + length
        }
        if start > 0 { flow.buffer.removeFirst(start) }
        if fin || rst { flows[key] = nil } else { flows[key] = flow }
    }
}
