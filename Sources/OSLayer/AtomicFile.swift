import Glibc
public import SystemPackage

/// Writes a whole file so that readers see the old content or the new, never half of one: the
/// bytes go to a temporary file beside the target, created with its final mode from the start
/// (a key must never be readable by others), and `rename(2)` puts it in place.
public enum AtomicFile {
    /// What failed, on which path, with the errno.
    public enum WriteError: Error, Sendable {
        case create(path: String, Errno)
        case write(path: String, Errno)
        case rename(from: String, to: String, Errno)

        public var errno: Errno {
            switch self {
            case .create(_, let code), .write(_, let code), .rename(_, _, let code): code
            }
        }
    }

    /// The temporary file `write` uses for `path`: unique per process, so two runs never share one.
    public static func temporaryPath(for path: String) -> String { path + ".tmp-\(getpid())" }

    public static func write(_ path: String, _ bytes: some Collection<UInt8>, mode: UInt32 = 0o644) throws(WriteError) {
        let temporary = temporaryPath(for: path)
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else { throw .create(path: temporary, Errno(rawValue: errno)) }
        do {
            try SystemCall.writeAll(fd, bytes)
        } catch {
            close(fd)
            unlink(temporary)
            throw .write(path: temporary, error)
        }
        // The umask may have narrowed the mode `open` was given.
        fchmod(fd, mode_t(mode))
        close(fd)
        guard rename(temporary, path) == 0 else {
            let code = Errno(rawValue: errno)
            unlink(temporary)
            throw .rename(from: temporary, to: path, code)
        }
    }
}

/// Signals to other processes and the end of them: the one SIGTERM-then-SIGKILL path.
public enum ProcessControl {
    public static let terminateSignal = SIGTERM
    public static let killSignal = SIGKILL
    public static let interruptSignal = SIGINT

    /// This process's id.
    public static var currentID: Int32 { getpid() }

    /// Ends this process at once with `status` (`_exit(2)`: no atexit handlers, no buffered output),
    /// as a signal handler's last resort may.
    public static func exitNow(_ status: Int32) -> Never { _exit(status) }

    /// Whether this process runs as root.
    public static var isRoot: Bool { geteuid() == 0 }

    /// `true` when the signal was delivered (or the process exists, for signal 0); never signals
    /// pid 1 or a process group (pid <= 1).
    @discardableResult
    public static func signal(_ pid: Int32, _ signal: Int32) -> Bool {
        pid > 1 && kill(pid, signal) == 0
    }

    /// Whether `pid` names a live process (not a zombie).
    public static func isAlive(_ pid: Int32) -> Bool {
        pid > 1 && (ProcessStat.of(pid)?.isAlive ?? false)
    }

    /// SIGTERM, up to `grace` for each process to exit, then SIGKILL and up to a second more.
    public static func terminate(_ pids: some Sequence<Int32>, grace: Duration) async {
        let all = Array(pids)
        for pid in all { signal(pid, SIGTERM) }
        let clock = ContinuousClock()
        let deadline = clock.now + grace
        var remaining = all.filter(isAlive)
        while !remaining.isEmpty, clock.now < deadline {
            try? await clock.sleep(for: .milliseconds(25))
            remaining = remaining.filter(isAlive)
        }
        guard !remaining.isEmpty else { return }
        for pid in remaining { signal(pid, SIGKILL) }
        let hardDeadline = clock.now + .seconds(1)
        while !remaining.isEmpty, clock.now < hardDeadline {
            try? await clock.sleep(for: .milliseconds(10))
            remaining = remaining.filter(isAlive)
        }
    }
}
