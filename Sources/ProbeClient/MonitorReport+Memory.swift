public import OSLayer
public import Results

extension MonitorReport.MemorySample {
    /// A sample of this process's memory (OSLayer `ProcessMemory`) after `checks` checks.
    public init(checks: Int, _ m: ProcessMemory) {
        self.init(checks: checks, rssKB: m.residentKB, anonKB: m.residentAnonKB, heapInUseKB: m.heapInUseBytes.map { $0 / 1024 },
                  heapFreeKB: m.heapFreeBytes.map { $0 / 1024 }, threads: m.threads)
    }
}
