#if canImport(CMalloc)
internal import CMalloc
#endif

/// This process's memory as the kernel counts it (resident pages, proc(5)) and as glibc's allocator
/// counts it (mallinfo2, malloc(3)): the resident size alone cannot tell memory the program holds
/// from free memory the allocator keeps for later.
public struct ProcessMemory: Sendable, Hashable, Codable {
    /// VmRSS of /proc/self/status, kB; 0 when it cannot be read.
    public var residentKB: Int
    /// Its anonymous part (RssAnon: heap, stacks) and its file-backed part (RssFile: the program's
    /// and the libraries' pages, paged in the first time code runs), kB; nil when not given.
    public var residentAnonKB: Int?
    public var residentFileKB: Int?
    /// Threads of the process (each holds a stack and its own allocator cache): libdispatch ends a
    /// worker that stayed idle for a few seconds, which shows as a drop in the figures above.
    public var threads: Int?
    /// Bytes the program holds through malloc: in use in the arenas (`uordblks`) plus the chunks
    /// malloc mapped on their own (`hblkhd`). nil where mallinfo2 is not available.
    public var heapInUseBytes: Int?
    /// Free bytes the arenas keep (`fordblks`): allocator retention, not the program's data.
    public var heapFreeBytes: Int?

    public init(residentKB: Int, residentAnonKB: Int? = nil, residentFileKB: Int? = nil, heapInUseBytes: Int?, heapFreeBytes: Int?) {
        self.residentKB = residentKB
        self.residentAnonKB = residentAnonKB
        self.residentFileKB = residentFileKB
        self.heapInUseBytes = heapInUseBytes
        self.heapFreeBytes = heapFreeBytes
    }

    /// The figures now: /proc/self/status (read with `SystemCall`, no Foundation) and mallinfo2,
    /// which sums every arena.
    public static func now() -> ProcessMemory {
        let status = SystemCall.readText("/proc/self/status", limit: 8192) ?? ""
        var memory = ProcessMemory(residentKB: field("VmRSS:", status: status) ?? 0, heapInUseBytes: nil, heapFreeBytes: nil)
        memory.residentAnonKB = field("RssAnon:", status: status)
        memory.residentFileKB = field("RssFile:", status: status)
        memory.threads = field("Threads:", status: status)
        #if canImport(CMalloc)
        let info = mallinfo2()
        memory.heapInUseBytes = Int(info.uordblks) + Int(info.hblkhd)
        memory.heapFreeBytes = Int(info.fordblks)
        #endif
        return memory
    }

    /// The figure of one field (`"VmRSS:"`, in kB; `"Threads:"`) of a /proc/PID/status text; nil
    /// when it has none.
    public static func field(_ name: String, status: String) -> Int? {
        for line in status.split(separator: "\n") where line.hasPrefix(name) {
            return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }
}
