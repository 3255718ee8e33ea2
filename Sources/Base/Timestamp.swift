public import Foundation

/// The one time format of reports and logs: RFC 3339 with fractional seconds, in UTC.
public enum Timestamp {
    public static func rfc3339(_ date: Date = Date()) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: date)
    }
}
