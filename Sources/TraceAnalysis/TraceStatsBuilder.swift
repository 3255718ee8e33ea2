import Base
import Foundation
import Histogram
import Results

/// Turns the internal aggregates into report values, with the definitions cited where each is computed.
enum TraceStatsBuilder {
    static func stats(_ m: TraceMetrics) -> TraceStats {
        let responded = m.answered + m.late
        // RFC 4737 section 6.1: reordered ratio = reordered packets / packets received (duplicates removed).
        let reorderedRatio = responded > 0 ? Double(m.reordered) / Double(responded) : nil
        // RFC 7680 section 4.1: loss ratio = lost / sent, with Tmax as the waiting time.
        let lossRatio = m.queries > 0 ? Double(m.lost) / Double(m.queries) : nil
        let rcodes = Dictionary(uniqueKeysWithValues: m.rcodes.indices.filter { m.rcodes[$0] > 0 }.map {
            (rcodeName($0), m.rcodes[$0])
        })
        return TraceStats(
            queries: m.queries, retransmissions: m.retransmissions, answered: m.answered, lost: m.lost, late: m.late,
            neverAnswered: m.lost - m.late, duplicates: m.duplicates, unmatchedResponses: m.unmatchedResponses,
            reordered: m.reordered, reorderedRatio: reorderedRatio, lossRatio: lossRatio,
            lossWilson95: m.queries > 0 ? wilson(m.lost, m.queries) : nil, rttMs: percentiles(m.rtt),
            truncated: m.truncated, snapTruncated: m.snapTruncated, rcodes: rcodes, querySizes: buckets(m.querySizes), responseSizes: buckets(m.responseSizes))
    }

    /// Percentiles from the HdrHistogram of microseconds (values are bucket-equivalent, 0.1% precision).
    static func percentiles(_ h: Histogram<UInt32>?) -> TraceStats.Percentiles {
        guard let h, h.totalCount > 0 else {
            return TraceStats.Percentiles(samples: 0, reason: "no response within Tmax")
        }
        func ms(_ micros: UInt64) -> Double { (Double(micros) / 1000 * 1000).rounded() / 1000 }
        return TraceStats.Percentiles(
            samples: Int(h.totalCount), min: ms(h.min), p50: ms(h.valueAtPercentile(50)), p90: ms(h.valueAtPercentile(90)),
            p99: ms(h.valueAtPercentile(99)), max: ms(h.max))
    }

    /// The Wilson 95 % interval of k in n (z = 1.96 as trace has always written it), rounded to 6 places.
    static func wilson(_ k: Int, _ n: Int) -> [Double] {
        guard let w = WilsonInterval(successes: k, trials: n, z: 1.96) else { return [] }
        func round6(_ x: Double) -> Double { (x * 1e6).rounded() / 1e6 }
        return [round6(w.low), round6(w.high)]
    }

    static func buckets(_ h: SizeHistogram) -> [TraceStats.SizeBucket] {
        h.counts.indices.filter { h.counts[$0] > 0 }.map { i in
            TraceStats.SizeBucket(fromBytes: i * SizeHistogram.width,
                                  toBytes: i == SizeHistogram.buckets ? nil : (i + 1) * SizeHistogram.width, count: h.counts[i])
        }
    }

    static func rcodeName(_ code: Int) -> String {
        let names = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET",
                     "NXRRSET", "NOTAUTH", "NOTZONE", "DSOTYPENI"]
        return code < names.count ? names[code] : "RCODE\(code)"
    }

    static func typeName(_ t: UInt16) -> String {
        switch t {
        case 1: "A"
        case 2: "NS"
        case 5: "CNAME"
        case 6: "SOA"
        case 10: "NULL"
        case 12: "PTR"
        case 15: "MX"
        case 16: "TXT"
        case 28: "AAAA"
        case 33: "SRV"
        case 41: "OPT"
        case 64: "SVCB"
        case 65: "HTTPS"
        case 255: "ANY"
        case 65399: "PRIVATE"
        default: "TYPE\(t)"
        }
    }

    /// The engine a domain's traffic looks like. iodine asks for NULL (or its PRIVATE type 65399) by
    /// default; MasterDnsVPN, dnstt and tunnelprobe's probes carry data in TXT answers to long encoded
    /// names. A label, not a proof: it only says which records carry the encoded names.
    static func kind(isTunnel: Bool, queries: Int, nullQueries: Int, txtQueries: Int) -> String {
        guard isTunnel else { return "plain" }
        if nullQueries * 2 >= queries, nullQueries > 0 { return "iodine-like" }
        if txtQueries * 2 >= queries, txtQueries > 0 { return "txt-tunnel" }
        return "tunnel"
    }
}
