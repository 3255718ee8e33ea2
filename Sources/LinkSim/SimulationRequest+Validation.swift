import FEC

/// A setting of a `SimulationRequest` outside what the simulator takes: `setting` names it and
/// `allowed` says what it takes (the command turns the setting into its flag's name).
public struct SimulationRequestError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Setting: String, Sendable, CaseIterable {
        case opportunities, runs, symbolSize, headerBytes, feedbackEntryBytes, overheadBudget, verifyGroups
        /// ARQ (`ARQConfiguration`).
        case window, retryLimit, rto, backoffFactor, feedbackTiming, nackMaxGap
    }

    public let setting: Setting
    public let allowed: String

    public init(_ setting: Setting, _ allowed: String) {
        self.setting = setting
        self.allowed = allowed
    }

    public var description: String { "\(setting.rawValue) must be \(allowed)" }
}

extension SimulationRequest {
    /// Every setting within what the simulator takes (the first one outside is thrown); the source
    /// and the levels are checked when they are parsed.
    public func validate() throws(SimulationRequestError) {
        if let opportunities, !(1...1_000_000_000).contains(opportunities) { throw SimulationRequestError(.opportunities, "1...1000000000") }
        guard (1...1000).contains(runs) else { throw SimulationRequestError(.runs, "1...1000") }
        guard (1...ReedSolomon.maxSymbolSize).contains(symbolSize) else { throw SimulationRequestError(.symbolSize, "1...\(ReedSolomon.maxSymbolSize)") }
        guard (0...1000).contains(headerBytes) else { throw SimulationRequestError(.headerBytes, "0...1000") }
        guard (0...100).contains(feedbackEntryBytes) else { throw SimulationRequestError(.feedbackEntryBytes, "0...100") }
        if let overheadBudget, !(overheadBudget >= 1 && overheadBudget.isFinite) { throw SimulationRequestError(.overheadBudget, "1 or more") }
        guard (0...1_000_000).contains(verifyGroups) else { throw SimulationRequestError(.verifyGroups, "0...1000000") }
        try arq.validate()
    }
}

extension ARQConfiguration {
    /// Every setting within what the simulator takes, whether ARQ is enabled or not.
    public func validate() throws(SimulationRequestError) {
        guard (1...65_536).contains(window) else { throw SimulationRequestError(.window, "1...65536") }
        guard (0...100_000).contains(retryLimit) else { throw SimulationRequestError(.retryLimit, "0...100000") }
        guard minRTOMs > 0, minRTOMs <= maxRTOMs, maxRTOMs <= 3_600_000, initialRTOMs > 0, initialRTOMs.isFinite else {
            throw SimulationRequestError(.rto, "0 < minimum <= maximum <= 3600000 ms, initial > 0 ms")
        }
        guard backoffFactor >= 1, backoffFactor <= 16 else { throw SimulationRequestError(.backoffFactor, "1...16") }
        guard nackDelayMs >= 0, nackRepeatMs > 0, ackIntervalMs >= 0, nackDelayMs.isFinite, nackRepeatMs.isFinite, ackIntervalMs.isFinite else {
            throw SimulationRequestError(.feedbackTiming, "NACK delay and ACK interval >= 0 ms, NACK repeat > 0 ms")
        }
        guard (0...65_536).contains(nackMaxGap) else { throw SimulationRequestError(.nackMaxGap, "0...65536") }
    }
}
