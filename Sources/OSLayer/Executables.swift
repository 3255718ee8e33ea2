import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Finds the external programs the lab, verify and the tests run, the same way everywhere.
public enum Executables {
    /// `sudo` and cron often run with a PATH that lacks the sbin directories.
    public static let fallbackDirectories = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]

    /// The full path of `program` (searched on PATH, then the fallback directories), or nil.
    public static func locate(_ program: String) -> String? {
        if program.contains("/") { return isExecutable(program) ? program : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + fallbackDirectories
        return directories.lazy.map { "\($0)/\(program)" }.first(where: isExecutable)
    }

    public static func isExecutable(_ path: String) -> Bool { access(path, X_OK) == 0 }
}
