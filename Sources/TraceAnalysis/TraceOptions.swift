/// How `trace` matches and groups (docs/TRACE.md).
public struct TraceOptions: Sendable, Hashable {
    /// RFC 7680 Tmax: a query without a response within it is lost. 5 s, the common stub-resolver timeout.
    public var tmaxNanos: Int64 = 5_000_000_000
    /// A response up to this long after Tmax is recognised as late (still lost, RFC 7680); later ones
    /// count as unmatched. Bounds the memory kept for lost queries.
    public var lateWindowNanos: Int64 = 60_000_000_000
    /// UDP/TCP ports whose traffic is DNS (either side).
    public var dnsPorts: Set<UInt16> = [53]
    /// BPF filter applied by libpcap while reading.
    public var filter: String?
    /// Labels at least this long are encoded tunnel data.
    public var encodedLabelMin = 16
    /// Record the per-query fates for `--export-fates`.
    public var recordFates = false
    /// Bounds on the number of resolvers (at most 32,768), domains and resolver x domain x type groups
    /// kept apart.
    public var maxResolvers = 4096
    public var maxDomains = 2048
    public var maxGroups = 8192
    /// Events are put back in time order within this much capture time, and at most this many wait
    /// (TimeOrderWindow, docs/TRACE.md "Records out of order").
    public var timeOrderWindowNanos: Int64 = 10_000_000_000
    public var timeOrderMaxEvents = TimeOrderWindow.defaultMaxEvents

    public init() {}
}
