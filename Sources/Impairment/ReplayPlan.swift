public import Base
public import Fates

/// The fates streams a `--replay` run applies, one per direction at most.
public struct ReplayPlan: Sendable, Hashable {
    public var up: FateStream?
    public var down: FateStream?
    public var source: FateTrace.Source

    public func stream(_ d: Direction) -> FateStream? { d == .up ? up : down }
}

extension ImpairmentConfig {
    /// Reads the `--replay` file and picks its streams: `up` (or, failing that, `roundTrip`, whose
    /// whole delay goes on the query) for queries and `down` for responses, of `--replay-resolver`
    /// or else the first of each. A direction that replays must not also run a stochastic model.
    /// Nil without `--replay`.
    public func loadReplay() throws(ImpairmentConfigError) -> ReplayPlan? {
        guard let path = replayPath else { return nil }
        let trace: FateTrace
        do {
            trace = try FateTrace.load(path: path)
        } catch {
            throw ImpairmentConfigError(.replay, error.description)
        }
        return try plan(for: trace)
    }

    /// The stream choice and the contradiction checks of `loadReplay`, for an already-read file.
    public func plan(for trace: FateTrace) throws(ImpairmentConfigError) -> ReplayPlan {
        var candidates = trace.streams
        if let resolver = replayResolver {
            candidates = candidates.filter { $0.resolver == resolver }
            guard !candidates.isEmpty else {
                let known = Set(trace.streams.map(\.resolver)).sorted().joined(separator: ", ")
                throw ImpairmentConfigError(.replayResolver, "no stream for \(resolver) in \(replayPath ?? "the file") (it has \(known))")
            }
        }
        let up = candidates.first { $0.direction == .up } ?? candidates.first { $0.direction == .roundTrip }
        let down = candidates.first { $0.direction == .down }
        for (d, stream) in [(Direction.up, up), (.down, down)] where stream != nil && direction(d).hasStochasticModel {
            throw ImpairmentConfigError(
                .replayAndModel, d,
                "the file replays the \(d.rawValue) direction; its loss, delay, jitter, duplicate and reorder come from the file"
            )
        }
        return ReplayPlan(up: up, down: down, source: trace.source)
    }
}
