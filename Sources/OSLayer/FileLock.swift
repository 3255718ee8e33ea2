public import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` (flock(2)) on an open file or directory, dropped when the descriptor closes.
public struct FileLock: Sendable {
    public let descriptor: Int32

    /// Opens the directory at `path` to lock it (close-on-exec).
    public static func openDirectory(_ path: String) throws(Errno) -> FileLock {
        FileLock(descriptor: try SystemCall.retryingInterrupts { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) })
    }

    /// Takes the lock if nobody holds it: false while another descriptor holds it (EWOULDBLOCK).
    public func tryLockExclusive() throws(Errno) -> Bool {
        do {
            _ = try SystemCall.retryingInterrupts { flock(descriptor, LOCK_EX | LOCK_NB) }
            return true
        } catch {
            if error == .wouldBlock { return false }
            throw error
        }
    }

    /// Closes the descriptor, which drops the lock.
    public func close() { _ = Glibc.close(descriptor) }
}

extension SystemCall {
    /// `mkdir` with `mode`; a path that already exists is not an error.
    public static func makeDirectory(_ path: String, mode: UInt32) throws(Errno) {
        do {
            _ = try retryingInterrupts { mkdir(path, mode_t(mode)) }
        } catch {
            if error != .fileExists { throw error }
        }
    }

    /// CLOCK_MONOTONIC in nanoseconds.
    public static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
