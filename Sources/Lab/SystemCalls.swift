import Base
import Foundation
import Glibc

/// Every raw system call the lab makes, in one place. Failures that matter come back as
/// `LabError` naming the path and errno text.
enum SystemCalls {
    static var isRoot: Bool { geteuid() == 0 }

    static func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

    static func isExecutable(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Device and inode: two paths name one namespace exactly when these match.
    struct FileIdentity: Hashable { var device: UInt64; var inode: UInt64 }

    static func identity(_ path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    static func readText(_ path: String, limit: Int = 1 << 20) -> String? { SystemCall.readText(path, limit: limit) }

    /// Writes through a temporary file and `rename` so readers never see half a file; the file
    /// is created with `mode` from the start (the key must never be readable by others).
    static func writeFile(_ path: String, _ contents: String, mode: mode_t) throws(LabError) {
        let temporary = path + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw LabError(.commandFailed, "cannot create \(temporary): \(errnoText())") }
        do {
            try SystemCall.writeAll(fd, contents.utf8)
        } catch {
            close(fd)
            unlink(temporary)
            throw LabError(.commandFailed, "cannot write \(temporary): \(error)")
        }
        fchmod(fd, mode)
        close(fd)
        guard rename(temporary, path) == 0 else {
            let reason = errnoText()
            unlink(temporary)
            throw LabError(.commandFailed, "cannot rename \(temporary) to \(path): \(reason)")
        }
    }

    /// `mkdir -p`, with `mode` for the directories it creates.
    static func makeDirectories(_ path: String, mode: mode_t) throws(LabError) {
        var current = ""
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, mode) != 0, errno != EEXIST {
                throw LabError(.commandFailed, "cannot create directory \(current): \(errnoText())")
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
    static func signal(_ pid: Int32, _ signal: Int32) -> Bool {
        pid > 1 && kill(pid, signal) == 0
    }

    /// The parts of /proc/PID/stat the lab needs; `nil` when there is no such process.
    typealias ProcessSnapshot = ProcessStat

    static func process(_ pid: Int32) -> ProcessStat? { ProcessStat.of(pid) }

    static func parseProcessStat(_ text: String) -> ProcessStat? { ProcessStat.parse(text) }

    /// The network namespace a process lives in.
    static func networkNamespace(of pid: Int32) -> FileIdentity? { identity("/proc/\(pid)/ns/net") }
}

/// An exclusive `flock` on a directory, held while a lab is built or torn down so that two
/// `up`/`down` calls on one state root cannot interleave. Polls instead of blocking a thread.
enum DirectoryLock {
    static func withLock<T>(
        on path: String,
        // Generous: a test run brings up several labs at once, and each holds the lock for its whole build.
        timeout: Duration = .seconds(300),
        _ body: () async throws(LabError) -> T
    ) async throws(LabError) -> T {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw LabError(.commandFailed, "cannot open \(path) to lock it: \(SystemCalls.errnoText())")
        }
        defer { close(fd) }  // closing the descriptor drops the lock
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK || code == EINTR else {
                throw LabError(.commandFailed, "cannot lock \(path): \(SystemCalls.errnoText(code))")
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
    private typealias SetnsFunction = @convention(c) (Int32, Int32) -> Int32
    private static let cloneNewNet: Int32 = 0x4000_0000  // CLONE_NEWNET, <linux/sched.h>

    /// Swift's Glibc module does not export `setns` (it is behind _GNU_SOURCE), so it is looked
    /// up once in the C library.
    private static let setnsFunction: SetnsFunction? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "setns") else { return nil }
        return unsafeBitCast(symbol, to: SetnsFunction.self)
    }()

    private final class Request: @unchecked Sendable {
        let namespaceFD: Int32
        var socketFD: Int32 = -1
        var failure: String?
        init(namespaceFD: Int32) { self.namespaceFD = namespaceFD }
    }

    /// A non-blocking IPv4 UDP socket created inside the namespace mounted at `namespacePath`.
    static func udp(namespacePath: String) throws(LabError) -> Int32 {
        guard let setns = setnsFunction else { throw LabError(.commandFailed, "setns is not available in this C library") }
        let namespaceFD = open(namespacePath, O_RDONLY | O_CLOEXEC)
        guard namespaceFD >= 0 else {
            throw LabError(.notUp, "cannot open network namespace \(namespacePath): \(SystemCalls.errnoText())")
        }
        defer { close(namespaceFD) }
        let request = Request(namespaceFD: namespaceFD)
        let context = Unmanaged.passRetained(SetnsBox(request: request, setns: setns)).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<SetnsBox>.fromOpaque(raw!).takeRetainedValue()
            let request = box.request
            guard box.setns(request.namespaceFD, NamespaceSocket.cloneNewNet) == 0 else {
                request.failure = "setns: \(SystemCalls.errnoText())"
                return nil
            }
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            if fd < 0 { request.failure = "socket: \(SystemCalls.errnoText())" }
            request.socketFD = fd
            return nil
        }, context)
        guard created == 0 else {
            Unmanaged<SetnsBox>.fromOpaque(context).release()
            throw LabError(.commandFailed, "cannot start a thread to enter \(namespacePath): \(SystemCalls.errnoText(created))")
        }
        pthread_join(thread, nil)
        if let failure = request.failure {
            throw LabError(.commandFailed, "cannot create a socket in \(namespacePath): \(failure)")
        }
        return request.socketFD
    }

    private final class SetnsBox {
        let request: Request
        let setns: SetnsFunction
        init(request: Request, setns: SetnsFunction) {
            self.request = request
            self.setns = setns
        }
    }

    static func bind(_ fd: Int32, address: String, port: Int) throws(LabError) {
        var socketAddress = try makeAddress(address, port: port)
        let result = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { throw LabError(.commandFailed, "cannot bind \(address):\(port): \(SystemCalls.errnoText())") }
    }

    static func send(_ fd: Int32, _ bytes: [UInt8], to address: String, port: Int) throws(LabError) {
        var socketAddress = try makeAddress(address, port: port)
        let sent = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard sent == bytes.count else { throw LabError(.commandFailed, "cannot send to \(address):\(port): \(SystemCalls.errnoText())") }
    }

    /// One datagram if one is waiting, with the address and port it came from.
    static func receive(_ fd: Int32) -> (bytes: [UInt8], address: String, port: Int)? {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var source = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = buffer.withUnsafeMutableBytes { raw in
            withUnsafeMutablePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT), $0, &length)
                }
            }
        }
        guard count >= 0 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        var addr = source.sin_addr
        inet_ntop(AF_INET, &addr, &text, socklen_t(INET_ADDRSTRLEN))
        let address = text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return (Array(buffer[0..<count]), address, Int(UInt16(bigEndian: source.sin_port)))
    }

    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    private static func makeAddress(_ address: String, port: Int) throws(LabError) -> sockaddr_in {
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
        guard (0...65535).contains(port), inet_pton(AF_INET, address, &socketAddress.sin_addr) == 1 else {
            throw LabError(.invalidConfig, "\(address):\(port) is not an IPv4 address and port")
        }
        return socketAddress
    }
}

extension SystemCalls {
    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}

extension SystemCalls {
    static var currentProcessID: Int32 { getpid() }
    static let terminateSignal = SIGTERM
    static let killSignal = SIGKILL
}
