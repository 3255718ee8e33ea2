public import DNSWire

/// How a download probe's N payload bytes are laid out in each record type, and how they are read back.
///
/// The payload is `Keystream(key, nonce)`: the client regenerates it and checks every byte. Types that
/// need several records carry an index so a resolver that shuffles an RRset cannot scramble the data.
public enum DownloadLayout {
    public static let supportedTypes: [DNSType] = [.txt, .null, .a, .aaaa, .cname, .mx, .srv]
    /// RFC 1035 3.3: a <character-string> holds at most 255 bytes.
    public static let txtStringBytes = 255
    static let txtString = txtStringBytes
    /// One base32 label of 63 characters carries 39 bytes.
    static let labelBytes = 39
    static let maxIndexedRecords = 255

    /// The largest payload one response can carry in `type` (before any size limit of the path).
    public static func maxPayload(type: DNSType, zone: DNSName) -> Int {
        switch type {
        case .txt: 65_000
        case .null: 65_000
        case .a: 3 * maxIndexedRecords
        case .aaaa: 15 * maxIndexedRecords
        case .cname: QNameCapacity.maxPayloadBytes(under: zone, encoding: .base32)
        case .mx: fitsOneLabel(zone) ? labelBytes * maxIndexedRecords : 0
        case .srv: fitsOneLabel(zone) ? (4 + labelBytes) * maxIndexedRecords : 0
        default: 0
        }
    }

    private static func fitsOneLabel(_ zone: DNSName) -> Bool { zone.wireLength + 64 <= 255 }

    public static func payload(key: ProbeKey, nonce: [UInt8], count: Int) -> [UInt8] {
        Keystream.bytes(key: key, purpose: Purpose.downloadPayload, nonce: nonce, count: count)
    }

    /// The answer records carrying `payload` for a query of `owner`.
    public static func records(payload: [UInt8], type: DNSType, owner: DNSName, zone: DNSName,
                               ttl: UInt32 = 0) throws(ProbeError) -> [DNSResourceRecord] {
        guard payload.count <= maxPayload(type: type, zone: zone) else {
            throw ProbeError(.outOfRange, "\(payload.count) bytes do not fit in \(type) records")
        }
        func rr(_ rdata: DNSRData) -> DNSResourceRecord { DNSResourceRecord(name: owner, ttl: ttl, rdata: rdata) }
        func name(_ chunk: ArraySlice<UInt8>) throws(ProbeError) -> DNSName {
            let labels = QNameCapacity.labels(splitting: LabelEncoding.base32.encode(Array(chunk)))
            do { return try DNSName(labels: labels + zone.labels) } catch {
                throw ProbeError(.outOfRange, "payload name does not fit: \(error)")
            }
        }
        switch type {
        case .txt:
            var strings: [[UInt8]] = []
            var i = 0
            repeat {
                strings.append(Array(payload[i..<min(i + txtString, payload.count)]))
                i += txtString
            } while i < payload.count
            return [rr(.txt(strings))]
        case .null:
            return [rr(.null(payload))]
        case .cname:
            return [rr(.cname(try name(payload[...])))]
        case .a, .aaaa:
            let width = type == .a ? 3 : 15
            return chunks(payload, width).enumerated().map { index, chunk in
                var data = [UInt8(index)] + chunk
                data += [UInt8](repeating: 0, count: width + 1 - data.count)
                return rr(type == .a ? .a(data) : .aaaa(data))
            }
        case .mx:
            var out: [DNSResourceRecord] = []
            for (index, chunk) in chunks(payload, labelBytes).enumerated() {
                out.append(rr(.mx(preference: UInt16(index), exchange: try name(chunk[...]))))
            }
            return out
        case .srv:
            var out: [DNSResourceRecord] = []
            for (index, chunk) in chunks(payload, 4 + labelBytes).enumerated() {
                var head = Array(chunk.prefix(4))
                head += [UInt8](repeating: 0, count: 4 - head.count)
                out.append(rr(.srv(priority: UInt16(index), weight: UInt16(head[0]) << 8 | UInt16(head[1]),
                                   port: UInt16(head[2]) << 8 | UInt16(head[3]), target: try name(chunk.dropFirst(4)))))
            }
            return out
        default:
            throw ProbeError(.unsupportedType, "download probes do not support \(type)")
        }
    }

    private static func chunks(_ bytes: [UInt8], _ width: Int) -> [[UInt8]] {
        stride(from: 0, to: bytes.count, by: width).map { Array(bytes[$0..<min($0 + width, bytes.count)]) }
    }

    /// Reassembles the payload from an answer section. `expected` is the size asked for: the fixed-size
    /// types (A, AAAA, SRV) pad their last record and are cut back to it.
    public static func extract(answers: [DNSResourceRecord], type: DNSType, owner: DNSName, zone: DNSName,
                               expected: Int) throws(ProbeError) -> [UInt8] {
        let rrs = answers.filter { $0.type == type && $0.name.equalsIgnoringCase(owner) }
        guard !rrs.isEmpty else { throw ProbeError(.malformedReply, "no \(type) record for the probe name") }
        func unname(_ n: DNSName) throws(ProbeError) -> [UInt8] {
            guard let labels = n.prefixLabels(droppingSuffix: zone) else {
                throw ProbeError(.malformedReply, "record target \(n) is outside the zone")
            }
            do { return try LabelEncoding.base32.decode(labels.flatMap { $0 }) } catch {
                throw ProbeError(.malformedReply, "record target is not base32")
            }
        }
        var indexed: [(Int, [UInt8])] = []
        for r in rrs {
            switch r.rdata {
            case .txt(let strings) where type == .txt:
                guard rrs.count == 1 else { throw ProbeError(.malformedReply, "\(rrs.count) TXT records, expected 1") }
                return strings.flatMap { $0 }
            case .null(let data) where type == .null:
                guard rrs.count == 1 else { throw ProbeError(.malformedReply, "\(rrs.count) NULL records, expected 1") }
                return data
            case .cname(let target) where type == .cname:
                return try unname(target)
            case .a(let d), .aaaa(let d):
                guard let first = d.first else { throw ProbeError(.malformedReply, "empty address record") }
                indexed.append((Int(first), Array(d.dropFirst())))
            case .mx(let preference, let exchange):
                indexed.append((Int(preference), try unname(exchange)))
            case .srv(let priority, let weight, let port, let target):
                let head = [UInt8(weight >> 8), UInt8(weight & 0xFF), UInt8(port >> 8), UInt8(port & 0xFF)]
                indexed.append((Int(priority), head + (try unname(target))))
            default:
                throw ProbeError(.malformedReply, "unexpected record data for \(type)")
            }
        }
        indexed.sort { $0.0 < $1.0 }
        for (position, entry) in indexed.enumerated() where entry.0 != position {
            throw ProbeError(.malformedReply, "record index \(entry.0) where \(position) was expected")
        }
        let joined = indexed.flatMap { $0.1 }
        return joined.count > expected && (type == .a || type == .aaaa || type == .srv)
            ? Array(joined.prefix(expected)) : joined
    }
}
