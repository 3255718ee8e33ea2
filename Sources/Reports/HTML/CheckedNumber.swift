/// A report reader meets numbers from a file anyone may edit (`report render`): arithmetic on them is
/// checked, and a figure that is out of range renders as "invalid" with the field named, never a trap
/// (issue 27: an edited path.json overflowed the loss-over-time sum).
enum CheckedNumber {
    /// The sum of counts, or nil when a count is negative or the sum overflows.
    static func sum(_ values: [Int]) -> Int? {
        var total = 0
        for v in values {
            guard v >= 0 else { return nil }
            let (s, overflow) = total.addingReportingOverflow(v)
            if overflow { return nil }
            total = s
        }
        return total
    }

    /// A whole number from a decoded double, or nil when it has none (not finite, beyond Int).
    static func int(_ value: Double) -> Int? {
        guard value.isFinite, abs(value) < 9.0e18 else { return nil }
        return Int(value.rounded())
    }

    /// What a reader sees in place of an out-of-range figure.
    static func invalid(_ field: String) -> String { "invalid (\(field) out of range)" }
}
