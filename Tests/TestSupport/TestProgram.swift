import Foundation

/// A program run to its end from a test, with what it printed.
public enum TestProgram {
    public struct Outcome: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String

        public init(status: Int32, stdout: String, stderr: String) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
        }
    }

    /// Runs `argv` (the program found on PATH through /usr/bin/env, or a path) to its end.
    public static func run(_ argv: [String]) throws -> Outcome {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = argv
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // stderr is read on a thread of its own: read after stdout, a program that filled the stderr
        // pipe (64 KiB of log lines) before closing stdout would wait on it forever, and so would this.
        let errors = ErrorReader(err.fileHandleForReading)
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = errors.wait()
        p.waitUntilExit()
        return Outcome(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }
}

/// Reads a pipe to its end on a thread of its own.
private final class ErrorReader: @unchecked Sendable {
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }.start()
    }

    /// What was read, once the pipe closed (the semaphore orders the thread's write before this read).
    func wait() -> Data {
        done.wait()
        return data
    }
}
