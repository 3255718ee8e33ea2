import FEC
import Testing

@Suite struct FECLevelTests {
    @Test func presetsFollowTheClientContract() {
        #expect(FECLevel.presets.map(\.name) == ["none", "conservative", "balanced", "aggressive"])
        #expect([FECLevel.conservative, .balanced, .aggressive].map { [$0.k, $0.m] } == [[8, 2], [12, 3], [16, 7]])
        #expect([FECLevel.conservative, .balanced, .aggressive].map(\.flushTimeoutMs) == [25, 20, 15])
        #expect(!FECLevel.none.isEnabled)
    }

    @Test func customLevelsInUDPspeederNotation() throws {
        let level = try FECLevel.parse("20:10")
        #expect(level.k == 20 && level.m == 10 && level.flushTimeoutMs == FECLevel.defaultCustomFlushTimeoutMs)
        #expect(try FECLevel.parse("10:3", flushTimeoutMs: 8).flushTimeoutMs == 8)
        #expect(try FECLevel.parse(" Balanced ").m == 3)
        #expect(try FECLevel.parseList("none,balanced,10:3,balanced").map(\.name) == ["none", "balanced", "10:3"])
    }

    @Test func badLevelsAreRefusedWithAReason() {
        #expect(throws: FECError(.badLevel, "")) { try FECLevel.parse("turbo") }
        #expect(throws: FECError(.badLevel, "")) { try FECLevel.parse("10:") }
        #expect(throws: FECError(.outOfRange, "")) { try FECLevel.parse("0:3") }
        #expect(throws: FECError(.outOfRange, "")) { try FECLevel.parse("10:0") }
        #expect(throws: FECError(.outOfRange, "")) { try FECLevel.parse("200:3") }
        #expect(throws: FECError(.outOfRange, "")) { try FECLevel.parse("10:300") }
        #expect(throws: FECError(.badLevel, "")) { try FECLevel.parseList("") }
    }

    @Test func partialGroupsGetRepairInProportion() {
        let balanced = FECLevel.balanced
        #expect(balanced.repairCount(originals: 12) == 3)
        #expect(balanced.repairCount(originals: 5) == 2)  // ceil(5 x 3 / 12)
        #expect(balanced.repairCount(originals: 1) == 1)
        #expect(FECLevel.none.repairCount(originals: 5) == 0)
    }
}
