import OSLayer
import Testing

@Suite struct ProcessMemoryTests {
    /// Fields of /proc/PID/status are read by name, with tabs or spaces before the figure.
    @Test func statusFields() {
        let status = "Name:\ttunnelprobe\nVmRSS:\t   38072 kB\nRssAnon:\t    3172 kB\nRssFile:    34900 kB\nThreads:\t5\n"
        #expect(ProcessMemory.field("VmRSS:", status: status) == 38_072)
        #expect(ProcessMemory.field("RssAnon:", status: status) == 3_172)
        #expect(ProcessMemory.field("RssFile:", status: status) == 34_900)
        #expect(ProcessMemory.field("Threads:", status: status) == 5)
        #expect(ProcessMemory.field("RssShmem:", status: status) == nil)
    }

    /// This process's figures: resident at least its anonymous part, and the heap in use grows by
    /// what is allocated and held (glibc's mallinfo2).
    @Test func figuresOfThisProcess() throws {
        let before = ProcessMemory.now()
        #expect(before.residentKB > 0 && (before.residentAnonKB ?? 0) <= before.residentKB && (before.threads ?? 0) >= 1)
        let held = [UInt8](repeating: 7, count: 4 << 20)
        let after = ProcessMemory.now()
        let grown = try #require(after.heapInUseBytes) - (try #require(before.heapInUseBytes))
        // Other threads of the test process (the test runner's own) may free a few KiB meanwhile: a
        // 64 KiB allowance still shows the 4 MiB array, which a figure blind to it could not.
        #expect(grown >= (4 << 20) - (64 << 10), "heap in use grew by \(grown) bytes for a 4 MiB array")
        #expect(held.count == 4 << 20)
    }
}
