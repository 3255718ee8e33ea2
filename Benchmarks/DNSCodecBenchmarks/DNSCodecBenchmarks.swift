import Benchmark
import DNSWire
import Impairment

// Messages per second through the DNSWire codec, for the messages a tunnel probe sends and
// receives. Each measured iteration handles 1,000 messages (scalingFactor .kilo), so the
// scaled throughput column reads as thousands of messages per second.

/// A typical probe QNAME: four labels of 63/63/63/48 lowercase base32 characters under
/// vpn.lab.test, 253 characters of text, 255 bytes on the wire (the maximum).
let probeName: DNSName = {
    let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
    var state: UInt32 = 0x2545_F491
    func label(_ count: Int) -> String {
        var bytes: [UInt8] = []
        for _ in 0..<count {
            state = state &* 1_664_525 &+ 1_013_904_223  // fixed LCG: same name every run
            bytes.append(alphabet[Int(state >> 27)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
    let text = [label(63), label(63), label(63), label(48), "vpn", "lab", "test"].joined(separator: ".")
    precondition(text.utf8.count == 253)
    return try! DNSName(text)
}()

let question = DNSQuestion(name: probeName, type: .txt)

/// Query: RD, one TXT question, EDNS OPT with a 4096-byte payload size.
let queryMessage = DNSMessage(
    header: DNSHeader(id: 0x5A3C, recursionDesired: true),
    questions: [question],
    edns: EDNS(udpPayloadSize: 4096)
)

/// Response: the same question and one TXT answer of 1,100 bytes in 255-byte strings
/// (4 x 255 + 80); the answer's owner is compressed to a pointer at the question name.
let responseMessage: DNSMessage = {
    var strings: [[UInt8]] = []
    var remaining = 1_100
    var byte: UInt8 = 0x30
    while remaining > 0 {
        let count = min(255, remaining)
        strings.append((0..<count).map { _ in
            byte = byte == 0x7A ? 0x30 : byte + 1
            return byte
        })
        remaining -= count
    }
    return DNSMessage(
        header: DNSHeader(id: 0x5A3C, isResponse: true, authoritative: true, recursionDesired: true),
        questions: [question],
        answers: [DNSResourceRecord(name: probeName, ttl: 0, rdata: .txt(strings))],
        edns: EDNS(udpPayloadSize: 4096)
    )
}()

let queryBytes: [UInt8] = try! queryMessage.serialized()
let responseBytes: [UInt8] = try! responseMessage.serialized()

/// Stable copies of the wire bytes for the `UnsafeRawBufferPointer` parsers, allocated once and
/// never freed. (A typed-throws closure passed to `withUnsafeBytes` inside the benchmark closure
/// crashes the Swift 6.3.1 optimizer in ARCSequenceOpts, so the loops read these instead.)
nonisolated(unsafe) let queryWire = stableCopy(queryBytes)
nonisolated(unsafe) let responseWire = stableCopy(responseBytes)

func stableCopy(_ bytes: [UInt8]) -> UnsafeRawBufferPointer {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 8)
    buffer.copyMemory(from: UnsafeRawBufferPointer(start: bytes, count: bytes.count))
    return UnsafeRawBufferPointer(buffer)
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 1_000_000
    )

    // Sanity: the fixtures round-trip, so the benchmarks measure real work.
    precondition(queryBytes.count == 12 + 255 + 4 + 11)
    precondition((try? DNSMessage(parsing: queryBytes)) == queryMessage)
    precondition((try? DNSMessage(parsing: responseBytes)) == responseMessage)

    Benchmark("decode query") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try DNSMessage(parsing: queryWire))
        }
    }

    Benchmark("decode response") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try DNSMessage(parsing: responseWire))
        }
    }

    Benchmark("encode query") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try queryMessage.serialized())
        }
    }

    Benchmark("encode response") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try responseMessage.serialized())
        }
    }

    Benchmark("summary") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try DNSMessage.summary(parsing: responseWire))
        }
    }

    // The impairment relay reads every datagram in place with DatagramInfo instead of DNSWire's
    // summary reader; these two rows, on the same 282-byte query, are the figure its comment cites.
    Benchmark("summary of a query") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try DNSMessage.summary(parsing: queryWire))
        }
    }

    Benchmark("relay DatagramInfo of a query") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(DatagramInfo(bytes: queryWire))
        }
    }
}
