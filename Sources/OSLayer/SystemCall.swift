public import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// The raw system calls every layer shares, over swift-system: EINTR is retried in one place and a
/// failure is a typed `Errno`, never a bare -1.
public enum SystemCall {
    /// Runs a call that returns -1 and sets errno on failure, again while it fails with EINTR.
    public static func retryingInterrupts<T: FixedWidthInteger & SignedInteger>(_ call: () -> T) throws(Errno) -> T {
        while true {
            let result = call()
            if result >= 0 { return result }
            let code = Errno(rawValue: errno)
            if code != .interrupted { throw code }
        }
    }

    /// Writes all of `bytes` to `fd`, retrying short writes and EINTR.
    public static func writeAll(_ fd: Int32, _ bytes: some Collection<UInt8>) throws(Errno) {
        let descriptor = FileDescriptor(rawValue: fd)
        let all = Array(bytes)
        var offset = 0
        while offset < all.count {
            let n: Int
            do {
                n = try all[offset...].withUnsafeBytes { try descriptor.write($0, retryOnInterrupt: true) }
            } catch let error as Errno {
                throw error
            } catch {
                throw .ioError
            }
            if n == 0 { throw .noSpace }
            offset += n
        }
    }

    /// At most `limit` bytes of the file at `path`, or nil when it cannot be opened or read.
    public static func readFile(_ path: String, limit: Int = 1 << 20) -> [UInt8]? {
        guard let fd = try? FileDescriptor.open(FilePath(path), .readOnly, options: [.closeOnExec]) else { return nil }
        defer { try? fd.close() }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while bytes.count < limit {
            guard let n = try? chunk.withUnsafeMutableBytes({ try fd.read(into: $0, retryOnInterrupt: true) }) else { return nil }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<min(n, limit - bytes.count)])
        }
        return bytes
    }

    /// The file at `path` as UTF-8 text (invalid bytes replaced), or nil.
    public static func readText(_ path: String, limit: Int = 1 << 20) -> String? {
        readFile(path, limit: limit).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// The fields of /proc/PID/stat that identify a process across pid reuse and say whether it lives
/// (proc(5)).
public struct ProcessStat: Sendable, Hashable {
    /// R, S, D, Z, X, ...
    public var state: Character
    /// Clock ticks after boot; with the pid it names one process even after the pid is reused.
    public var startTime: UInt64

    public init(state: Character, startTime: UInt64) {
        self.state = state
        self.startTime = startTime
    }

    /// Not a zombie and not dead.
    public var isAlive: Bool { state != "Z" && state != "X" && state != "x" }

    /// The process `pid`, or nil when there is none.
    public static func of(_ pid: Int32) -> ProcessStat? {
        guard pid > 0, let text = SystemCall.readText("/proc/\(pid)/stat", limit: 4096) else { return nil }
        return parse(text)
    }

    /// The command name in field 2 may hold spaces and parentheses, so fields are counted after the
    /// last `)`: field 3 is the state and field 22 the start time.
    public static func parse(_ text: String) -> ProcessStat? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 20, let state = fields[0].first, let start = UInt64(fields[19]) else { return nil }
        return ProcessStat(state: state, startTime: start)
    }
}

/// What `stat(2)` says about a path, for the checks the lab and verify make.
public enum FileStatus {
    /// Device and inode: two paths name one file (one namespace) exactly when these match.
    public struct Identity: Sendable, Hashable {
        public var device: UInt64
        public var inode: UInt64

        public init(device: UInt64, inode: UInt64) {
            self.device = device
            self.inode = inode
        }
    }

    /// Whether anything (even a dangling symbolic link) is at `path` (`lstat`).
    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// The device and inode of what `path` leads to (`stat`), nil when there is nothing.
    public static func identity(_ path: String) -> Identity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// The last modification of `path` itself (`lstat`), in seconds since 1970, nil when absent.
    public static func modificationSeconds(_ path: String) -> Int? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return Int(info.st_mtim.tv_sec)
    }

    /// A regular file this process may execute.
    public static func isExecutableFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
    }
}

extension SystemCall {
    /// Writes `bytes` to the existing file at `path` in place, in one `write` (a /proc/sys value:
    /// procfs has no rename); a short write is an error.
    public static func writeInPlace(_ path: String, _ bytes: [UInt8]) throws(Errno) {
        let fd = try retryingInterrupts { open(path, O_WRONLY | O_CLOEXEC) }
        defer { close(fd) }
        let written = try retryingInterrupts { bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
        guard written == bytes.count else { throw .ioError }
    }
}
