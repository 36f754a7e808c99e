/// An entry's lifespan as its header stores it (bytes 13 and 32; see ``EntryHeader``). The
/// cache's public `Lifespan` maps to it one to one; a date is seconds since 1970 here.
package enum StoredLifespan: Sendable, Hashable {
    /// Kind 0: valid until removed.
    case never
    /// Kind 1: valid this many seconds after "validated at".
    case seconds(Double)
    /// Kind 2: valid until this moment, in seconds since 1970.
    case until(Double)
    /// Kind 3: valid this many seconds after the last use.
    case sinceLastUse(Double)

    /// The header's (kind, value) pair for this lifespan.
    package var encoded: (UInt8, Double) {
        switch self {
        case .never: (0, 0)
        case .seconds(let seconds): (1, seconds)
        case .until(let date): (2, date)
        case .sinceLastUse(let seconds): (3, seconds)
        }
    }

    /// The lifespan of a header's (kind, value) pair; `nil` for a kind this build does not know.
    package init?(kind: UInt8, value: Double) {
        switch kind {
        case 0: self = .never
        case 1: self = .seconds(value)
        case 2: self = .until(value)
        case 3: self = .sinceLastUse(value)
        default: return nil
        }
    }
}
