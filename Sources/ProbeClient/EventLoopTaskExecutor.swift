public import NIOCore

/// Runs Swift tasks on one NIO event loop (SE-0417 task executor preference). A task that waits
/// for a `QueryEngine` answer is then resumed on the thread that read the answer, with no hop to
/// the global executor.
///
/// Why `monitor` runs its checks here: every hop from the event loop to the global executor costs
/// libdispatch continuations allocated on the loop's thread and freed into the cache of a worker
/// thread, which keeps up to 1,024 of them per thread (swift-corelibs-libdispatch,
/// `DISPATCH_CONTINUATION_CACHE_LIMIT`); those caches filled over the first ~2,000 checks and were
/// most of monitor's memory growth after check 100 (`scripts/bench-monitor.sh`).
public final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    public let loop: any EventLoop

    public init(_ loop: any EventLoop) {
        self.loop = loop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
