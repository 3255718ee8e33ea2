import Foundation
import Glibc

/// Runs blocking work on a thread of its own that has entered another network namespace.
/// `setns` changes only the calling thread, so the rest of the process never moves; sockets and
/// pcap handles made on that thread stay bound to the namespace for their whole life.
enum NamespaceThread {
    private typealias SetnsFunction = @convention(c) (Int32, Int32) -> Int32
    private static let cloneNewNet: Int32 = 0x4000_0000  // CLONE_NEWNET, <linux/sched.h>

    /// Glibc's Swift module hides `setns` behind _GNU_SOURCE; it is looked up in the C library.
    private static let setnsFunction: SetnsFunction? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "setns") else { return nil }
        return unsafeBitCast(symbol, to: SetnsFunction.self)
    }()

    /// Moves the calling thread (only) into the namespace at `path`.
    static func enter(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return setnsFunction?(fd, cloneNewNet) == 0
    }

    /// Runs `body` on a new thread inside the namespace at `path` (`/run/netns/NAME`).
    static func run<T: Sendable>(in path: String, _ body: @escaping @Sendable () -> T) async throws(VerifyError) -> T {
        let result: Result<T, VerifyError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else {
                    continuation.resume(returning: .failure(VerifyError(.sandboxFailed, "cannot open namespace \(path): \(String(cString: strerror(errno)))")))
                    return
                }
                defer { close(fd) }
                guard let setns = setnsFunction, setns(fd, cloneNewNet) == 0 else {
                    continuation.resume(returning: .failure(VerifyError(.sandboxFailed, "cannot enter namespace \(path): \(String(cString: strerror(errno)))")))
                    return
                }
                continuation.resume(returning: .success(body()))
            }
            thread.start()
        }
        return try result.get()
    }
}
