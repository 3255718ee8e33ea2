import Foundation

/// The DNS record types the engines answer with (RFC 1035 3.2.2; PRIVATE is iodine's name for 65399).
public enum RecordType: String, Sendable, Hashable, Codable, CaseIterable {
    case txt = "TXT"
    case null = "NULL"
    case privateUse = "PRIVATE"
    case cname = "CNAME"
    case mx = "MX"
    case srv = "SRV"
    case a = "A"

    /// Parses the names tunnelprobe writes (`"TXT"`, `"NULL"`, ...), case-insensitively. Nil for others.
    public init?(name: String) {
        self.init(rawValue: name.trimmingCharacters(in: .whitespaces).uppercased())
    }
}
