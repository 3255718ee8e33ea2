import OSLayer
import Testing

struct ProgramRunTests {
    @Test func lastLineSkipsBlankLinesAndTrims() {
        #expect(ProgramRun.lastLine("one\n  two  \n\n \n") == "two")
        #expect(ProgramRun.lastLine("\n \n") == nil)
    }

    /// swift-argument-parser prints the reason, then the usage: the reason is what a person needs.
    @Test func reasonLinePrefersTheLastErrorLine() {
        let output = """
            Error: --up-loss: 2 is not a probability within 0...1
            Usage: tunnelprobe impair <options>
              See 'tunnelprobe impair --help' for more information.
            """
        #expect(ProgramRun.reasonLine(output) == "--up-loss: 2 is not a probability within 0...1")
        #expect(ProgramRun.reasonLine("starting\nbind failed: address in use\n") == "bind failed: address in use")
    }
}
