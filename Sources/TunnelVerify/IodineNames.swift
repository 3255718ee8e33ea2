import EngineModels

/// How iodine 0.7 lays its data out in query names, and what that means behind a resolver that
/// minimises QNAMEs (RFC 9156).
///
/// iodine fills a hostname of up to `-M` characters (default 255) with data, a dot every 57
/// characters (encoding.c `build_hostname`): by default one query carries several data labels. A
/// minimising resolver first asks iodined for the delegated zone plus the *last* data label alone,
/// with QTYPE A; iodined cannot decode that label and does not answer (or takes it for another
/// command when its first letter is one), so the resolver sends the full name only after its
/// timeouts (unbound 1.17: six tries in about 0.75 s, per query). Measured in the lab: the
/// handshake took 23 s and 4 of 5 HTTP GETs got nothing in 10 s; with one data label per name
/// (`-M` = domain length + 64) the minimised query is the full name and data flows.
/// The same resolver's A-first query also rules out iodine's NULL, TXT, MX and SRV types: iodined
/// answers an A query with a CNAME, which the resolver then follows; only CNAME queries work,
/// and iodine's type detection finds that after 15 tries (about 15 s) unless given `-T CNAME`.
struct IodineNames: Sendable, Hashable {
    /// The tunnel domain, without a trailing dot.
    var domain: String
    /// iodine's extra arguments, where `-M` may be.
    var arguments: [String]

    /// The `-M` value iodine runs with (clamped as iodine clamps it, to 10...255).
    var hostnameLimit: Int {
        var value = IodineModel.hostnameRange.upperBound
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            if argument == "-M", arguments.index(after: index) < arguments.endIndex {
                value = Int(arguments[arguments.index(after: index)]) ?? value
                index = arguments.index(after: index)
            } else if argument.hasPrefix("-M"), let number = Int(argument.dropFirst(2)) {
                value = number
            }
            index = arguments.index(after: index)
        }
        return min(max(value, IodineModel.hostnameRange.lowerBound), IodineModel.hostnameRange.upperBound)
    }

    /// Whether a query can carry its data in more than one label (the layout is the engine model's).
    var spansSeveralLabels: Bool { IodineModel.spansSeveralLabels(maxLength: hostnameLimit, domainLength: domain.count) }

    /// The largest `-M` that keeps every query's data in one label under `domain`.
    var oneLabelLimit: Int { IodineModel.oneLabelHostnameLimit(domainLength: domain.count) }

    /// The query type iodine's own detection settled on, when its log shows it detected one
    /// ("Autodetecting DNS query type" then "Using DNS type CNAME queries").
    static func detectedType(log: String) -> String? {
        guard log.contains("Autodetecting DNS query type") else { return nil }
        guard let line = log.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("Using DNS type ") }) else { return nil }
        return line.dropFirst("Using DNS type ".count).split(separator: " ").first.map(String.init)
    }

    private var fix: String { "one data label per query (-M \(oneLabelLimit) for \(domain)) and -T CNAME" }

    /// The resolver looks QNAME-minimising, in words for a verdict, when iodine's log says so:
    /// its type detection gave up NULL for CNAME (or A) while its names span several labels.
    /// nil otherwise, so a plain failure keeps its plain reason.
    func minimisationEvidence(log: String) -> String? {
        guard spansSeveralLabels, let detected = IodineNames.detectedType(log: log), detected == "CNAME" || detected == "A" else { return nil }
        return "the resolver looks QNAME-minimising: iodine's type detection gave up NULL for \(detected) "
            + "(the resolver asks A first and follows iodined's CNAME answer), and such a resolver sends the last "
            + "of iodine's several data labels alone, which iodined cannot decode; iodine needs \(fix)"
    }

    /// Why data may not cross although the handshake is done, from iodine's names and its log;
    /// nil when the names fit one label (minimisation then splits nothing).
    func dataStallHint(log: String) -> String? {
        guard spansSeveralLabels else { return nil }
        return minimisationEvidence(log: log)
            ?? "if the resolver minimises QNAMEs, it sends the last of iodine's several data labels alone, which iodined cannot decode; iodine then needs \(fix)"
    }
}
