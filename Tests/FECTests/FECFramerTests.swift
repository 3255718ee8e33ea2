import FEC
import Testing

@Suite struct FECFramerTests {
    @Test func aFullGroupClosesOnItsKthOriginal() {
        var framer = FECFramer(level: .conservative)
        for i in 0..<7 {
            let placed = framer.add(atMs: Double(i))
            #expect(placed.group == 0 && placed.index == i && placed.closed == nil)
        }
        let last = framer.add(atMs: 7)
        #expect(last.closed == FECFramer.Closed(group: 0, originals: 8, repairs: 2, byTimeout: false))
        #expect(framer.flushDeadlineMs == nil)
        #expect(framer.add(atMs: 8).group == 1)
    }

    @Test func theFlushTimeoutClosesAPartialGroupWithItsRepair() {
        var framer = FECFramer(level: .balanced)  // 12+3, 20 ms
        _ = framer.add(atMs: 100)
        _ = framer.add(atMs: 105)
        #expect(framer.flushDeadlineMs == 120)
        #expect(framer.flushIfDue(atMs: 119.9) == nil)
        let closed = framer.flushIfDue(atMs: 120)
        #expect(closed == FECFramer.Closed(group: 0, originals: 2, repairs: 1, byTimeout: true))
        #expect(framer.flushDeadlineMs == nil)
        // The next original opens group 1 and restarts the clock.
        #expect(framer.add(atMs: 300).group == 1)
        #expect(framer.flushDeadlineMs == 320)
    }

    @Test func noneNeverGroups() {
        var framer = FECFramer(level: .none)
        #expect(framer.add(atMs: 0).closed == nil)
        #expect(framer.flushDeadlineMs == nil)
        #expect(framer.flushIfDue(atMs: 1e9) == nil)
    }
}
