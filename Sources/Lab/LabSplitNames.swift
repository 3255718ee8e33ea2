/// Names the tunnel lab's resolvers (the lab's unbound and the tunnel's unbound) answer
/// themselves, for split-tunnel checks by domain. Reserved names only (`.test`, RFC 6761) and
/// documentation addresses only (RFC 5737, RFC 3849), so nothing they lead to exists anywhere.
public enum LabSplitNames {
    public static let zone = "split.test"
    /// A name a split sends through the tunnel in the lab tests.
    public static let tunnelled = "in.split.test"
    public static let tunnelledAddresses = ["198.51.100.80", "2001:db8:5911::80"]
    /// A name a split sends direct in the lab tests.
    public static let direct = "out.split.test"
    public static let directAddresses = ["203.0.113.80", "2001:db8:5912::80"]

    /// unbound `server:` lines: a static zone with the records above.
    static var unboundLines: [String] {
        var lines = ["local-zone: \"\(zone).\" static"]
        for (name, addresses) in [(tunnelled, tunnelledAddresses), (direct, directAddresses)] {
            for address in addresses {
                lines.append("local-data: \"\(name). 60 IN \(address.contains(":") ? "AAAA" : "A") \(address)\"")
            }
        }
        return lines
    }
}
