/// How a cache chooses which values leave its memory tier, and which entries leave its disk
/// tier, when it is over its limits.
///
/// Set it with ``Cache/Configuration-swift.struct/evictionPolicy``. Either way, a locked
/// entry leaves only when no unlocked one is left to go. The disk tier keeps its order in
/// the folder's store, so every process sharing the folder and the next launch follow it
/// (see <doc:StorageAndLimits>).
public enum EvictionPolicy: Sendable, Hashable {
    /// Keeps what is read often over what was read once: a scroll past hundreds of values
    /// read once does not push out one read every day. The default.
    ///
    /// New values enter a small probationary segment and reach the main one by being read
    /// again; the cache runs S3-FIFO or W-TinyLFU (a small recency window before a segmented
    /// main part guarded by a frequency sketch), whichever a small simulation on a sample of
    /// the keys finds hitting more lately, so it follows a moving working set and holds part
    /// of a loop larger than the cache. A hit sets a few bits; the order is not strictly by
    /// recency. The disk tier runs an S3-FIFO-like order over its store: entries never used
    /// since written go first, except the newest, and a key evicted that way is let back in
    /// as reused.
    case frequencyAware
    /// Evicts the value read or written longest ago: Cashier's order before
    /// ``frequencyAware``, for code that relies on strict least-recently-used order.
    case leastRecentlyUsed
}
