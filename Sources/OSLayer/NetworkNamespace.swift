import Foundation
import Glibc
public import SystemPackage

/// Entering a network namespace: the one place that calls `setns(2)`. `setns` changes only the
/// calling thread, so work runs on a thread of its own and the rest of the process never moves;
/// sockets (and pcap handles) made on that thread stay bound to the namespace for their whole life.
public enum NetworkNamespace {
    /// Why a thread could not enter a namespace: opening its file or `setns` itself failed.
    public enum EntryError: Error, Sendable, CustomStringConvertible {
        case open(Errno)
        case enter(Errno)

        public var errno: Errno {
            switch self {
            case .open(let code), .enter(let code): code
            }
        }

        public var description: String { errno.description }
    }

    private typealias SetnsFunction = @convention(c) (Int32, Int32) -> Int32
    private static let cloneNewNet: Int32 = 0x4000_0000  // CLONE_NEWNET, <linux/sched.h>

    /// Glibc's Swift module hides `setns` behind _GNU_SOURCE; it is looked up once in the C library.
    private static let setnsFunction: SetnsFunction? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "setns") else { return nil }
        return unsafeBitCast(symbol, to: SetnsFunction.self)
    }()

    /// Moves the calling thread (only) into the namespace at `path` (`/run/netns/NAME`).
    public static func enter(_ path: String) throws(EntryError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .open(Errno(rawValue: Glibc.errno)) }
        defer { close(fd) }
        guard let setns = setnsFunction else { throw .enter(.noFunction) }
        guard setns(fd, cloneNewNet) == 0 else { throw .enter(Errno(rawValue: Glibc.errno)) }
    }

    /// Starts a thread that enters the namespace at `path` and then runs `body` with the outcome
    /// (a long-lived server loop may run there for the life of the process).
    public static func detachThread(in path: String, _ body: @escaping @Sendable (Result<Void, EntryError>) -> Void) {
        let thread = Thread {
            do throws(EntryError) {
                try enter(path)
                body(.success(()))
            } catch {
                body(.failure(error))
            }
        }
        thread.start()
    }

    /// Runs `body` on a new thread inside the namespace at `path` and returns what it returned.
    public static func run<T: Sendable>(in path: String, _ body: @escaping @Sendable () -> T) async throws(EntryError) -> T {
        let result: Result<T, EntryError> = await withCheckedContinuation { continuation in
            detachThread(in: path) { entered in
                continuation.resume(returning: entered.map { body() })
            }
        }
        return try result.get()
    }

    /// Runs `body` on a new thread inside the namespace at `path` and blocks the calling thread
    /// until it ends (for synchronous callers that make one socket there).
    public static func runBlocking<T: Sendable>(in path: String, _ body: @escaping @Sendable () -> T) throws(EntryError) -> T {
        let box = BlockingResult<T>()
        detachThread(in: path) { entered in
            box.set(entered.map { body() })
        }
        return try box.wait().get()
    }

    private final class BlockingResult<T: Sendable>: @unchecked Sendable {
        private let condition = NSCondition()
        private var value: Result<T, EntryError>?

        func set(_ result: Result<T, EntryError>) {
            condition.lock()
            value = result
            condition.signal()
            condition.unlock()
        }

        func wait() -> Result<T, EntryError> {
            condition.lock()
            defer { condition.unlock() }
            while value == nil { condition.wait() }
            return value!
        }
    }
}
