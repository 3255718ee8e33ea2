import ArgumentParser

/// A comma-separated list of a closed set's names (`--checks exitIP,dnsLeak`), in the order given.
/// A name outside the set refuses the whole value, with the names the flag takes; `none`
/// is the empty list where the flag allows it (`none` in `allowsNone`).
struct ChoiceList<Choice>: ExpressibleByArgument
where Choice: RawRepresentable & CaseIterable, Choice.RawValue == String {
    let values: [Choice]

    init?(argument: String) {
        if argument == "none", Self.allowsNone {
            values = []
            return
        }
        var values: [Choice] = []
        for name in argument.split(separator: ",") {
            guard let value = Choice(rawValue: String(name)) else { return nil }
            values.append(value)
        }
        guard !values.isEmpty else { return nil }
        self.values = values
    }

    /// Whether `none` (the empty list) is a value: only where the help says so.
    static var allowsNone: Bool { Choice.self is any NoneIsAChoice.Type }

    static var allValueStrings: [String] { Choice.allCases.map(\.rawValue) + (allowsNone ? ["none"] : []) }
}

/// A closed set whose `ChoiceList` flag also takes `none` (`resilience --scenarios none`).
protocol NoneIsAChoice {}
