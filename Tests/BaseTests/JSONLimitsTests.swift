import Base
import Testing

struct JSONLimitsTests {
    let limits = JSONLimits(maxBytes: 1000, maxDepth: 3)

    @Test func acceptsWhatFitsAndCountsOnlyRealBrackets() throws {
        try limits.check(Array(#"{"a":[1,{"b":2}]}"#.utf8))
        // Brackets inside strings, escaped quotes included, are text, not nesting.
        try limits.check(Array(#"{"a":"[[[[{{{{\"[[[["}"#.utf8))
        try limits.check([UInt8]())
    }

    @Test func refusesDepthWithTheOffsetWhereItPassed() {
        #expect(throws: JSONLimits.Violation(kind: .tooDeep, offset: 3, limit: 3)) {
            try limits.check(Array("[[[[]]]]".utf8))
        }
    }

    @Test func refusesSizeBeforeReadingTheBytes() {
        #expect(throws: JSONLimits.Violation(kind: .tooLarge, offset: 1000, limit: 1000)) {
            try limits.check([UInt8](repeating: 0x20, count: 1001))
        }
    }

    /// The profile that took Foundation 10-52 s to reject: a megabyte of open brackets.
    @Test func aMegabyteOfNestingIsRefusedByTheProfileLimits() {
        let bytes = [UInt8](repeating: UInt8(ascii: "["), count: 1 << 20)
        #expect(throws: JSONLimits.Violation.self) { try JSONLimits.profile.check(bytes) }
    }
}
