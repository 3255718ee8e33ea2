import Base
import DNSWire
import Testing

/// Seeded mutation fuzzing of the parser.
///
/// What is asserted, precisely: for every input x, `DNSMessage(parsing: x)` returns or throws
/// a `DNSWireError` (a trap would kill the test process). When it returns m:
///   1. m serializes without error, compressed and uncompressed;
///   2. both serializations parse back to a message equal to m (names compared byte-exactly,
///      so letter case survives; unknown RDATA survives as raw bytes);
///   3. serializing that re-parsed message gives the same bytes again.
/// Not asserted: that serialize(parse(x)) == x. Parsing drops the header Z bit, the OPT Z
/// bits, trailing bytes and the original compression layout, and may move OPT to the front
/// of the additional section.
/// `DNSMessage.summary` runs on every input too; when the full parse succeeds its header and
/// first question must agree with it. So does `DNSMessage.firstQuestionName(ignoringLengthLimit:)`:
/// when it reads a name and the full parse succeeds, the two names agree (plain labels).
@Suite("DNSMessage fuzzing")
struct DNSFuzzTests {
    static let seed: UInt64 = 0x7E57_F022

    static var corpus: [[UInt8]] {
        get throws {
            var messages = [Fixtures.tunnelQuery, Fixtures.everyType]
            var withAnswer = Fixtures.tunnelQuery
            withAnswer.header.isResponse = true
            withAnswer.answers = [DNSResourceRecord(name: withAnswer.questions[0].name, ttl: 0,
                                                    rdata: .txt([Array("payload".utf8), [0, 1, 2]]))]
            messages.append(withAnswer)
            var seeds = try messages.map { try $0.serialized() }
            seeds.append(try Fixtures.everyType.serialized(compress: false))
            return seeds
        }
    }

    /// 4 shards of 50,000 mutated messages, run in parallel; shard k uses seed `seed + k`.
    @Test(.timeLimit(.minutes(2)), arguments: 0..<4)
    func mutatedMessages(shard: Int) throws {
        let corpus = try Self.corpus
        let seed = Self.seed + UInt64(shard)
        var rng = SplitMix64(seed: seed)
        var parsed = 0
        var codes: [DNSWireError.Code: Int] = [:]
        let iterations = 50_000
        for iteration in 0..<iterations {
            var input = corpus[Int.random(in: 0..<corpus.count, using: &rng)]
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                Self.mutate(&input, using: &rng)
            }
            let (result, problem) = Self.check(input)
            if let problem {
                Issue.record("seed 0x\(String(seed, radix: 16)) iteration \(iteration): \(problem); input \(input)")
                return
            }
            switch result {
            case .success: parsed += 1
            case .failure(let error): codes[error.code, default: 0] += 1
            }
        }
        let histogram = codes.sorted { $0.value > $1.value }.map { "\($0.key.rawValue)=\($0.value)" }
        print("DNS fuzz seed 0x\(String(seed, radix: 16)): \(parsed) of \(iterations) parsed; \(histogram.joined(separator: " "))")
        // The mutations should exercise both outcomes and many error paths.
        #expect(parsed > iterations / 50, "parsed \(parsed) of \(iterations)")
        #expect(codes.count >= 5, "\(codes)")
    }

    @Test func randomBytes() throws {
        var rng = SplitMix64(seed: Self.seed ^ 0xFFFF)
        for iteration in 0..<20_000 {
            var input = rng.bytes(Int.random(in: 0...64, using: &rng))
            if input.count >= 12, Bool.random(using: &rng) {
                // Small counts so the body is actually read.
                for index in 4..<12 { input[index] = index % 2 == 0 ? 0 : UInt8.random(in: 0...3, using: &rng) }
            }
            if let problem = Self.check(input).problem {
                Issue.record("iteration \(iteration): \(problem); input \(input)")
                return
            }
        }
    }

    /// Parses `input` and, when that succeeds, checks the properties listed on the suite;
    /// `problem` describes the first one that does not hold.
    static func check(_ input: [UInt8]) -> (result: Result<DNSMessage, DNSWireError>, problem: String?) {
        let result = Result { () throws(DNSWireError) in try DNSMessage(parsing: input) }
        let summary = Result { () throws(DNSWireError) in try DNSMessage.summary(parsing: input) }
        let lenient = DNSMessage.firstQuestionName(ignoringLengthLimit: input)
        guard case .success(let message) = result else { return (result, nil) }
        if let lenient, let question = message.questions.first {
            var text = question.name.description.lowercased()
            if text.hasSuffix(".") { text.removeLast() }
            // Escaped labels (dots, blanks, bytes past ASCII inside a label) are spelled otherwise.
            if !text.contains("\\"), text != lenient {
                return (result, "the lenient question name \(lenient) is not the parsed \(text)")
            }
        }
        do throws(DNSWireError) {
            let compressed = try message.serialized()
            let plain = try message.serialized(compress: false)
            let again = try DNSMessage(parsing: compressed)
            let againPlain = try DNSMessage(parsing: plain)
            let reserialized = try again.serialized()
            if again != message || againPlain != message || reserialized != compressed {
                return (result, "round trip changed the message: \(message) -> \(again)")
            }
            guard case .success(let summary) = summary else {
                return (result, "summary failed where the full parse succeeded")
            }
            if summary.header != message.header || summary.question != message.questions.first {
                return (result, "summary disagrees with the full parse")
            }
        } catch {
            return (result, "a parsed message failed to round-trip: \(error)")
        }
        return (result, nil)
    }

    static func mutate(_ bytes: inout [UInt8], using rng: inout SplitMix64) {
        switch Int.random(in: 0..<8, using: &rng) {
        case 0, 1:  // flip one bit
            guard !bytes.isEmpty else { return }
            bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= 1 << UInt8.random(in: 0...7, using: &rng)
        case 2:  // overwrite a byte, often with a pointer or label-type prefix
            guard !bytes.isEmpty else { return }
            let interesting: [UInt8] = [0, 1, 0x3F, 0x40, 0x80, 0xC0, 0xFF, 12, 41]
            bytes[Int.random(in: 0..<bytes.count, using: &rng)] =
                Bool.random(using: &rng) ? interesting[Int.random(in: 0..<interesting.count, using: &rng)] : UInt8.random(in: 0...255, using: &rng)
        case 3:  // truncate
            bytes.removeLast(Int.random(in: 0...bytes.count, using: &rng))
        case 4:  // insert random bytes
            let at = Int.random(in: 0...bytes.count, using: &rng)
            bytes.insert(contentsOf: rng.bytes(Int.random(in: 1...8, using: &rng)), at: at)
        case 5:  // delete a range
            guard !bytes.isEmpty else { return }
            let start = Int.random(in: 0..<bytes.count, using: &rng)
            bytes.removeSubrange(start..<min(bytes.count, start + Int.random(in: 1...8, using: &rng)))
        case 6:  // change a section count
            guard bytes.count >= 12 else { return }
            let field = 4 + 2 * Int.random(in: 0...3, using: &rng)
            bytes[field] = 0
            bytes[field + 1] = UInt8.random(in: 0...6, using: &rng)
        default:  // duplicate a slice somewhere else (creates plausible names and records)
            guard !bytes.isEmpty else { return }
            let start = Int.random(in: 0..<bytes.count, using: &rng)
            let slice = Array(bytes[start..<min(bytes.count, start + Int.random(in: 1...24, using: &rng))])
            bytes.insert(contentsOf: slice, at: Int.random(in: 0...bytes.count, using: &rng))
        }
    }
}
