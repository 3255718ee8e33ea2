import Base
import OSLayer
import Foundation

/// Every raw system call the lab makes, in one place. Failures that matter come back as
/// `LabError` naming the path and errno text.
enum SystemCalls {
    static var isRoot: Bool { ProcessControl.isRoot }

    static func isExecutable(_ path: String) -> Bool { FileStatus.isExecutableFile(path) }

    static func exists(_ path: String) -> Bool { FileStatus.exists(path) }

    /// Device and inode: two paths name one namespace exactly when these match.
    typealias FileIdentity = FileStatus.Identity

    static func identity(_ path: String) -> FileIdentity? { FileStatus.identity(path) }

    static func readText(_ path: String, limit: Int = 1 << 20) -> String? { SystemCall.readText(path, limit: limit) }

    /// Writes through a temporary file and `rename` so readers never see half a file; the file
    /// is created with `mode` from the start (the key must never be readable by others).
    static func writeFile(_ path: String, _ contents: String, mode: UInt32) throws(LabError) {
        do {
            try AtomicFile.write(path, Array(contents.utf8), mode: mode)
        } catch {
            switch error {
            case .create(let temporary, let code): throw LabError(.commandFailed, "cannot create \(temporary): \(code)")
            case .write(let temporary, let code): throw LabError(.commandFailed, "cannot write \(temporary): \(code)")
            case .rename(let temporary, let path, let code): throw LabError(.commandFailed, "cannot rename \(temporary) to \(path): \(code)")
            }
        }
    }

    /// `mkdir -p`, with `mode` for the directories it creates.
    static func makeDirectories(_ path: String, mode: UInt32) throws(LabError) {
        var current = ""
        for component in path.split(separator: "/") {
            current += "/" + component
            do {
                try SystemCall.makeDirectory(current, mode: mode)
            } catch {
                throw LabError(.commandFailed, "cannot create directory \(current): \(error)")
            }
        }
    }

    static func removeTree(_ path: String) throws(LabError) {
        guard exists(path) else { return }
        do {
            try FileManager.default.removeItem(atPath: path)
        } catch {
            throw LabError(.commandFailed, "cannot remove \(path): \(error)")
        }
    }

    /// `true` when the signal was delivered (or the process exists, for signal 0).
    @discardableResult
    static func signal(_ pid: Int32, _ signal: Int32) -> Bool { ProcessControl.signal(pid, signal) }

    /// The parts of /proc/PID/stat the lab needs; `nil` when there is no such process.
    typealias ProcessSnapshot = ProcessStat

    static func process(_ pid: Int32) -> ProcessStat? { ProcessStat.of(pid) }

    static func parseProcessStat(_ text: String) -> ProcessStat? { ProcessStat.parse(text) }

    /// The network namespace a process lives in.
    static func networkNamespace(of pid: Int32) -> FileIdentity? { identity("/proc/\(pid)/ns/net") }
}

/// An exclusive `flock` on a directory, held while a lab is built or torn down so that two
/// `up`/`down` calls on one state root cannot interleave. Polls instead of blocking a thread
/// (`FileLock`, OSLayer).
enum DirectoryLock {
    static func withLock<T>(
        on path: String,
        // Generous: a test run brings up several labs at once, and each holds the lock for its whole build.
        timeout: Duration = .seconds(300),
        _ body: () async throws(LabError) -> T
    ) async throws(LabError) -> T {
        let lock: FileLock
        do {
            lock = try FileLock.openDirectory(path)
        } catch {
            throw LabError(.commandFailed, "cannot open \(path) to lock it: \(error)")
        }
        defer { lock.close() }  // closing the descriptor drops the lock
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            do {
                if try lock.tryLockExclusive() { break }
            } catch {
                throw LabError(.commandFailed, "cannot lock \(path): \(error)")
            }
            guard clock.now < deadline else {
                throw LabError(.commandFailed, "cannot lock \(path): another lab up or down has held it for \(timeout)")
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return try await body()
    }
}

/// A UDP socket that lives in another network namespace. A socket stays in the namespace it was
/// created in, so a short-lived thread enters the namespace (`setns` changes only the calling
/// thread), creates the socket and ends; the rest of the process never changes namespace.
enum NamespaceSocket {
    /// A non-blocking IPv4 UDP socket created inside the namespace mounted at `namespacePath`.
    static func udp(namespacePath: String) throws(LabError) -> Int32 {
        do {
            return try BlockingSocket.open(.udp, for: IPSocketAddress(nil, port: 0), nonBlocking: true, inNamespace: namespacePath).descriptor
        } catch {
            switch error {
            case .namespace(.open(let code)): throw LabError(.notUp, "cannot open network namespace \(namespacePath): \(code)")
            case .namespace(.enter(let code)): throw LabError(.commandFailed, "cannot create a socket in \(namespacePath): setns: \(code)")
            case .socket(let code): throw LabError(.commandFailed, "cannot create a socket in \(namespacePath): socket: \(code)")
            }
        }
    }

    static func bind(_ fd: Int32, address: String, port: Int) throws(LabError) {
        let socketAddress = try makeAddress(address, port: port)
        do {
            try BlockingSocket(descriptor: fd).bind(to: socketAddress)
        } catch {
            throw LabError(.commandFailed, "cannot bind \(address):\(port): \(error)")
        }
    }

    static func send(_ fd: Int32, _ bytes: [UInt8], to address: String, port: Int) throws(LabError) {
        let socketAddress = try makeAddress(address, port: port)
        let sent: Int
        do {
            sent = try BlockingSocket(descriptor: fd).send(bytes, to: socketAddress)
        } catch {
            throw LabError(.commandFailed, "cannot send to \(address):\(port): \(error)")
        }
        guard sent == bytes.count else { throw LabError(.commandFailed, "cannot send to \(address):\(port): \(sent) of \(bytes.count) bytes sent") }
    }

    /// One datagram if one is waiting, with the address and port it came from.
    static func receive(_ fd: Int32) -> (bytes: [UInt8], address: String, port: Int)? {
        guard let (bytes, source) = try? BlockingSocket(descriptor: fd).receiveDatagram(maximum: 65536, dontWait: true) else {
            return nil
        }
        return (bytes, source.host, source.port)
    }

    static func close(_ fd: Int32) { BlockingSocket(descriptor: fd).close() }

    private static func makeAddress(_ address: String, port: Int) throws(LabError) -> IPSocketAddress {
        guard let socketAddress = IPSocketAddress(ipv4: address, port: port) else {
            throw LabError(.invalidConfig, "\(address):\(port) is not an IPv4 address and port")
        }
        return socketAddress
    }
}

extension SystemCalls {
    static func environment(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name]
    }
}

extension SystemCalls {
    static var currentProcessID: Int32 { ProcessControl.currentID }
    static let terminateSignal = ProcessControl.terminateSignal
    static let killSignal = ProcessControl.killSignal
}
