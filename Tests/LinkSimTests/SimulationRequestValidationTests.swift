import Testing
import LinkSim
import FEC

/// `SimulationRequest.validate()`: each setting outside what the simulator takes is named, with what
/// it takes; the defaults pass.
struct SimulationRequestValidationTests {
    private func request(_ change: (inout SimulationRequest) -> Void) -> SimulationRequest {
        var r = SimulationRequest(source: .model(LossModel(.bernoulli(0.01))))
        change(&r)
        return r
    }

    @Test func theDefaultsAndTheBoundsPass() throws {
        try request { _ in }.validate()
        try request {
            $0.opportunities = 1_000_000_000
            $0.runs = 1000
            $0.symbolSize = ReedSolomon.maxSymbolSize
            $0.headerBytes = 0
            $0.feedbackEntryBytes = 100
            $0.overheadBudget = 1
            $0.verifyGroups = 0
            $0.arq.window = 65_536
            $0.arq.retryLimit = 0
            $0.arq.minRTOMs = 5
            $0.arq.maxRTOMs = 5
            $0.arq.backoffFactor = 1
            $0.arq.nackDelayMs = 0
            $0.arq.nackMaxGap = 0
        }.validate()
    }

    @Test(arguments: [
        ({ @Sendable (r: inout SimulationRequest) in r.opportunities = 0 }, SimulationRequestError.Setting.opportunities),
        ({ @Sendable (r: inout SimulationRequest) in r.runs = 1001 }, .runs),
        ({ @Sendable (r: inout SimulationRequest) in r.symbolSize = 0 }, .symbolSize),
        ({ @Sendable (r: inout SimulationRequest) in r.symbolSize = ReedSolomon.maxSymbolSize + 1 }, .symbolSize),
        ({ @Sendable (r: inout SimulationRequest) in r.headerBytes = 1001 }, .headerBytes),
        ({ @Sendable (r: inout SimulationRequest) in r.feedbackEntryBytes = -1 }, .feedbackEntryBytes),
        ({ @Sendable (r: inout SimulationRequest) in r.overheadBudget = 0.9 }, .overheadBudget),
        ({ @Sendable (r: inout SimulationRequest) in r.overheadBudget = .infinity }, .overheadBudget),
        ({ @Sendable (r: inout SimulationRequest) in r.verifyGroups = -1 }, .verifyGroups),
        ({ @Sendable (r: inout SimulationRequest) in r.arq.window = 0 }, .window),
        ({ @Sendable (r: inout SimulationRequest) in r.arq.retryLimit = 100_001 }, .retryLimit),
        ({ @Sendable (r: inout SimulationRequest) in r.arq.minRTOMs = 0 }, .rto),
        ({ @Sendable (r: inout SimulationRequest) in r.arq.minRTOMs = 6000 }, .rto),
        ({ @Sendable (r: inout SimulationRequest) in r.arq.initialRTOMs = .nan }, .rto),
        ({ @Sendable (r: inout SimulationRequest) in r.arq.backoffFactor = 17 }, .backoffFactor),
        ({ @Sendable (r: inout SimulationRequest) in r.arq.nackRepeatMs = 0 }, .feedbackTiming),
        ({ @Sendable (r: inout SimulationRequest) in r.arq.ackIntervalMs = -1 }, .feedbackTiming),
        ({ @Sendable (r: inout SimulationRequest) in r.arq.nackMaxGap = 65_537 }, .nackMaxGap),
    ] as [(@Sendable (inout SimulationRequest) -> Void, SimulationRequestError.Setting)])
    func aSettingOutsideItsRangeIsNamed(change: @Sendable (inout SimulationRequest) -> Void, setting: SimulationRequestError.Setting) {
        #expect { try request(change).validate() } throws: { error in
            (error as? SimulationRequestError)?.setting == setting
        }
    }
}
