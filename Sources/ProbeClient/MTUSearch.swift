public import Results
/// The MTU search MasterDnsVPN made familiar: the highest size first (accept at once if it passes),
/// then the lowest (give up if that fails), then a binary search in between.
///
/// Each size gets up to `attempts` tries, but only transient failures (timeouts, SERVFAIL) are retried:
/// a TC bit or a rewritten payload repeats deterministically and marks a size limit, not loss; nor is
/// a SERVFAIL that came back after the resolver's failure cache was waited out (`ProbeOutcome.settled`).
public struct MTUSearch: Sendable {
    public struct Step: Sendable {
        public var size: Int
        public var outcomes: [ProbeOutcome]
        public var passed: Bool { outcomes.last?.ok ?? false }
    }

    public struct Result: Sendable {
        /// The largest size that passed, nil when even the lowest failed.
        public var best: Int?
        public var steps: [Step]
        /// The failure at the smallest size that failed above `best` (what limits the path).
        public var limitedBy: ProbeFailure?
        /// Outcome of the passing probe at `best` (its response size and RTT).
        public var bestOutcome: ProbeOutcome?
        public var probes: Int { steps.reduce(0) { $0 + $1.outcomes.count } }
        /// The most frequent failure overall, for a rejection reason.
        public var dominantFailure: ProbeFailure? {
            let failures = steps.flatMap { $0.outcomes.compactMap(\.failure) }
            return Dictionary(grouping: failures, by: { $0 }).max { $0.value.count < $1.value.count }?.key
        }
    }

    public var low: Int
    public var high: Int
    public var attempts: Int
    /// Quiet retries a size that was only lost gets before its timeout rejects the pair or becomes
    /// its limit (`CongestionWindow.timeoutRule`); 0 for a scan without a congestion window, whose
    /// quiet is never known.
    public var quietRetries: Int

    public init(low: Int, high: Int, attempts: Int, quietRetries: Int = 0) {
        self.low = low
        self.high = high
        self.attempts = max(1, attempts)
        self.quietRetries = max(0, quietRetries)
    }

    /// Sizes worth trying before bisecting, given the passing outcome at `low` (see `run`).
    public typealias Guesses = (_ lowOutcome: ProbeOutcome) -> [Int]

    /// `guesses`, when given, names likely limits once `high` has failed and `low` passed: each
    /// guess `g` is probed with `g + 1`, so a right guess ends the search in two probes instead of
    /// a dozen. A guess only narrows the bracket, each end of which a probe verified, so a wrong
    /// guess costs its probes and never changes the result.
    ///
    /// `control`, when given, is a probe that passed before (an echo): when even the lowest size
    /// was only lost, the control and the lowest size are asked again back to back, and the lowest
    /// size fails only when the control passes next to it (else the moment was bad, not the size).
    ///
    /// A timeout is final only when it survives a quiet retry (`quietRetries`,
    /// `CongestionWindow.timeoutRule`): a lowest size, or the size just above the best, whose every
    /// try was only lost is asked once more when the scan is quiet, and again while that retry met
    /// a decrease or was lost with other expected answers (up to `quietRetries` in all). Only when
    /// the quiet retry is lost too does the timeout reject the pair or bound its MTU: a size probe
    /// that is no congestion signal itself is lost in the scan's own overload as readily as an
    /// echo, and no other sign tells that loss from the path's.
    public func run(guesses: Guesses? = nil, control: (() async -> ProbeOutcome)? = nil,
                    _ probe: (Int) async -> ProbeOutcome) async -> Result {
        var steps: [Step] = []
        var cache: [Int: Bool] = [:]
        func check(_ size: Int, fresh: Bool = false) async -> Bool {
            if !fresh, let known = cache[size] { return known }
            var step = Step(size: size, outcomes: [])
            var tries = 0
            var congestedRetries = 0
            // A re-check asks once: the size had its attempts.
            while tries < (fresh ? 1 : attempts) {
                if Task.isCancelled { break }
                let outcome = await probe(size)
                step.outcomes.append(outcome)
                if outcome.ok { break }
                if let f = outcome.failure, !f.isTransient || outcome.settled { break }
                // Lost while the scan itself was congested: not an attempt at this size.
                if outcome.congested, congestedRetries < Self.congestedRetries {
                    congestedRetries += 1
                    continue
                }
                tries += 1
            }
            steps.append(step)
            cache[size] = step.passed
            return step.passed
        }
        /// The quiet retry of a size whose latest tries were only lost (`quietRetries`); whether it passed.
        func checkQuietly(_ size: Int) async -> Bool {
            guard quietRetries > 0, !Task.isCancelled, let last = steps.last(where: { $0.size == size }),
                  !last.passed, last.onlyLost else { return cache[size] ?? false }
            let step = Step(size: size, outcomes: await Self.askedQuietly(upTo: quietRetries) { await probe(size) })
            steps.append(step)
            cache[size] = step.passed
            return step.passed
        }
        guard high >= low else { return Result(best: nil, steps: []) }
        var best: Int?
        /// Binary search for the largest passing size in left...right, all of which lie above `best`.
        func bisect(_ left: inout Int, _ right: inout Int) async {
            while left <= right, !Task.isCancelled {
                let mid = (left + right) / 2
                if await check(mid) {
                    best = mid
                    left = mid + 1
                } else {
                    right = mid - 1
                }
            }
        }
        /// The lowest size, re-asked next to the control while it was only lost, and then once the
        /// scan is quiet.
        func checkLow() async -> Bool {
            if await check(low) { return true }
            var rounds = 0
            while let control, rounds < Self.recheckRounds, !Task.isCancelled,
                  let last = steps.last(where: { $0.size == low }), !last.passed, last.onlyLost {
                rounds += 1
                let reference = await CongestionWindow.expectingAnswer { await control() }
                guard reference.ok else {
                    try? await Task.sleep(nanoseconds: UInt64(rounds) * 250_000_000)
                    continue
                }
                if await check(low, fresh: true) { return true }
                break
            }
            // Lost next to a passing control, or never next to one: the size's own failure only
            // when a quiet retry is lost too.
            return await checkQuietly(low)
        }
        if await check(high) {
            best = high
        } else if low < high, await checkLow() {
            best = low
            var left = low + 1
            var right = high - 1
            let lowOutcome = steps.last { $0.size == low }?.outcomes.last ?? ProbeOutcome()
            for guess in guesses?(lowOutcome) ?? [] where left <= guess && guess <= right && !Task.isCancelled {
                if await check(guess) {
                    best = guess
                    left = guess + 1
                    guard left <= right else { break }
                    if await check(left) {
                        best = left
                        left += 1
                    } else {
                        right = left - 1
                    }
                } else {
                    right = guess - 1
                }
            }
            await bisect(&left, &right)
        }
        /// `size` passed on a re-check: it is the best, and the search goes on above it.
        func searchAbove(_ size: Int) async {
            best = size
            var left = size + 1
            var right = (Self.smallestFailed(above: size, in: steps)?.size ?? high + 1) - 1
            await bisect(&left, &right)
        }
        // A size that only timed out is a limit only if a smaller size still passes at the same
        // moment: the best size and the timed-out one just above it are asked again back to back.
        // When both pass, the timeout was the moment's (a burst, the scan's own load) and the search
        // goes on above; when the best fails too, the moment is bad and the pair is asked again
        // (a bounded number of rounds). A deterministic failure (TC, a rewritten or cut payload)
        // is a limit at once.
        var rounds = 0
        while let current = best, rounds < Self.recheckRounds, !Task.isCancelled,
              let above = Self.smallestFailed(above: current, in: steps), above.onlyLost {
            rounds += 1
            let again = await CongestionWindow.expectingAnswer { await check(current, fresh: true) }
            guard again else {
                try? await Task.sleep(nanoseconds: UInt64(rounds) * 250_000_000)
                continue
            }
            if await check(above.size, fresh: true) {
                await searchAbove(above.size)
            } else {
                break
            }
        }
        // The timed-out size above the best bounds the MTU only when a quiet retry is lost too.
        var quietRounds = 0
        while let current = best, quietRounds < Self.recheckRounds, quietRetries > 0, !Task.isCancelled,
              let above = Self.smallestFailed(above: current, in: steps), above.onlyLost {
            quietRounds += 1
            guard await checkQuietly(above.size) else { break }
            // The rest of the search goes as usual: holding every later probe of a lossy host for
            // a quiet scan slowed the /16 sweep + MTU scan (bench-sweep.sh) by seconds.
            await searchAbove(above.size)
        }
        let failedAbove = Self.smallestFailed(above: best ?? Int.min, in: steps)
        let bestStep = steps.last { $0.size == best && $0.passed }
        return Result(best: best, steps: steps, limitedBy: failedAbove?.outcomes.last?.failure,
                      bestOutcome: bestStep?.outcomes.last)
    }

    /// The quiet retries of `CongestionWindow.timeoutRule` for a probe that timed out: it is asked
    /// once more when the scan is quiet, and again while that retry timed out met by a decrease or
    /// lost with other expected answers, up to `count` in all. Every outcome, the last the verdict
    /// (a timeout then is evidence); none with `count` 0.
    public static func askedQuietly(upTo count: Int, _ probe: () async -> ProbeOutcome) async -> [ProbeOutcome] {
        var outcomes: [ProbeOutcome] = []
        while outcomes.count < count, !Task.isCancelled {
            let outcome = await CongestionWindow.quietly { await probe() }
            outcomes.append(outcome)
            guard outcome.failure == .timeout, outcome.congested || outcome.lostWithOthers else { break }
        }
        return outcomes
    }

    /// Retries of one size's probes lost while the scan was congested, on top of `attempts`.
    static let congestedRetries = 2
    /// Rounds of re-asking a timed-out size next to the best one before the timeout is its limit.
    static let recheckRounds = 3

    /// The smallest size above `size` whose latest try failed.
    static func smallestFailed(above size: Int, in steps: [Step]) -> Step? {
        var latest: [Int: Step] = [:]
        for step in steps where step.size > size { latest[step.size] = step }
        return latest.values.filter { !$0.passed }.min { $0.size < $1.size }
    }
}

extension MTUSearch.Step {
    /// Every try timed out (or could not be sent): the answer may have been lost, not refused.
    var onlyLost: Bool {
        !outcomes.isEmpty && outcomes.allSatisfy { $0.failure == .timeout || $0.failure == .sendFailed }
    }
}
