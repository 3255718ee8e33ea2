/// One file given to `sweep --ranges`, as the sweep took it: its format, its SHA-256 (so a report
/// names exactly the file it swept), and for a delegated file the countries chosen and the CIDRs
/// each gave.
public struct SweepRangeFile: Sendable, Hashable, Codable {
    public enum Format: String, Sendable, Hashable, Codable {
        /// One entry a line: CIDR (ipdeny.com's zone files), start-end or one address.
        case list
        /// An RIR's delegated-extended statistics: `registry|cc|type|start|value|date|status[|...]`.
        case delegated
    }

    public var path: String
    public var sha256: String
    public var format: Format
    /// Delegated files: the CIDRs taken for each chosen country code (the records' address counts
    /// split into CIDR blocks), in file order.
    public var countries: [String: [String]]?
    /// Delegated files: ipv4 records of other countries, and ipv6/asn records (not swept).
    public var otherCountryRecords: Int?
    public var nonIPv4Records: Int?

    public init(path: String, sha256: String, format: Format, countries: [String: [String]]? = nil,
                otherCountryRecords: Int? = nil, nonIPv4Records: Int? = nil) {
        self.path = path
        self.sha256 = sha256
        self.format = format
        self.countries = countries
        self.otherCountryRecords = otherCountryRecords
        self.nonIPv4Records = nonIPv4Records
    }
}
