public import Testing

/// Runs `body` once after every test of a suite, also when the suite is run alone with `--filter` or
/// a test fails: what a suite builds for its tests (a lab with tunnel servers) is removed by the suite
/// itself, not by a test that has to run last.
public struct SuiteTeardown: SuiteTrait, TestScoping {
    let body: @Sendable () async -> Void

    public var isRecursive: Bool { false }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        do {
            try await function()
        } catch {
            await body()
            throw error
        }
        await body()
    }
}

extension Trait where Self == SuiteTeardown {
    /// `@Suite(.teardown { await lab.down() })`.
    public static func teardown(_ body: @escaping @Sendable () async -> Void) -> Self { SuiteTeardown(body: body) }
}
