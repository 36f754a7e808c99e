import CashierPlatform
import Foundation

/// Which keys' records in the shared tier a read of this folder must not trust, shared by
/// every ``Cache`` instance of the process on the folder (it lives in the folder's ``FolderState``).
///
/// A key is untrusted there while a write or removal of it, landed locally, has not reached
/// the shared tier yet (the record there is older: reading it would bring back a value removed
/// or replaced here), and after one failed to reach it, until a later one of that key does
/// (``SharedTierWrites`` reports them). ``Cache/removeAll()`` does the same for every key.
/// A read that finds a key untrusted goes on as a miss there, to the fetch.
///
/// Marks are made under the key's lock, in the same step as the local change; a read checks
/// before it asks the shared tier and again, under the key's lock, before it keeps what it
/// found. Bounded by the keys with a write on its way, and those whose write failed.
final class SharedTierLedger: Sendable {
    private struct State {
        /// Writes and removals of each key on their way to the shared tier.
        var pending: [String: Int] = [:]
        /// Removals of every key on their way.
        var pendingAll = 0
        /// Keys whose last write or removal did not reach the shared tier.
        var failed: Set<String> = []
        /// Whether the last removal of every key did not reach it.
        var allFailed = false
        /// When this folder last changed each key (a write's ``SharedRecord/writtenAt``, a
        /// removal's time), for keys changed since ``changedBefore`` moved; see ``lastChange(of:)``.
        var lastChanges: [String: Date] = [:]
        /// Every key was last changed here no later than this, unless ``lastChanges`` says
        /// later: the time of the last ``Cache/removeAll()``, or of the latest change forgotten
        /// when ``lastChanges`` was full.
        var changedBefore = Date.distantPast
    }
    /// How many keys' last changes are kept apart (``lastChange(of:)``); past that they are
    /// forgotten, and the bound every key counts as changed by moves to the latest of them.
    static let lastChangesLimit = 4096
    private let state = Locked(State())

    /// Whether the shared tier's records of `name` may be read.
    func isTrusted(_ name: String) -> Bool {
        state.withLock { state in
            state.pendingAll == 0 && !state.allFailed && state.pending[name] == nil && !state.failed.contains(name)
        }
    }

    /// Whether a change of `name` is on its way to the shared tier (queued or being sent).
    func isPending(_ name: String) -> Bool {
        state.withLock { $0.pending[name] != nil }
    }

    /// A change of `name` (`nil`: of every key) is on its way to the shared tier.
    func begin(_ name: String?) {
        state.withLock { state in
            if let name { state.pending[name, default: 0] += 1 } else { state.pendingAll += 1 }
        }
    }

    /// A change of `name` (`nil`: of every key) was made here at `date`: a record another
    /// instance's change carries is used only when written later (``lastChange(of:)``).
    func noteChange(_ name: String?, at date: Date) {
        state.withLock { state in
            guard let name else {
                state.changedBefore = max(state.changedBefore, date)
                state.lastChanges.removeAll()
                return
            }
            if state.lastChanges[name] == nil, state.lastChanges.count >= Self.lastChangesLimit {
                state.changedBefore = max(state.changedBefore, state.lastChanges.values.max() ?? .distantPast)
                state.lastChanges.removeAll()
            }
            state.lastChanges[name] = max(state.lastChanges[name] ?? .distantPast, date)
        }
    }

    /// The latest time this folder changed `name` at (or may have: a bound that may be later
    /// than the change), by its own clock; `distantPast` when it never did.
    ///
    /// A record another instance stored and announced (``SharedChange/stored(_:_:)``) written
    /// no later than this may be older than what the tier keeps of this folder's change: a
    /// tier that orders changes by time keeps the newer, and the announcement may come after
    /// this folder's change reached the tier (in commit order, the store before it).
    func lastChange(of name: String) -> Date {
        state.withLock { state in max(state.changedBefore, state.lastChanges[name] ?? .distantPast) }
    }

    /// A change ``begin(_:)`` announced has ended: it reached the shared tier or not, or was
    /// superseded by a later change of the same key before it was sent (`reached` `nil`).
    func end(_ name: String?, reached: Bool?) {
        state.withLock { state in
            if let name {
                if let count = state.pending[name], count > 1 {
                    state.pending[name] = count - 1
                } else {
                    state.pending[name] = nil
                }
                if reached == true { state.failed.remove(name) } else if reached == false { state.failed.insert(name) }
            } else {
                state.pendingAll = max(0, state.pendingAll - 1)
                if reached == true {
                    state.allFailed = false
                    state.failed.removeAll()
                } else if reached == false {
                    state.allFailed = true
                }
            }
        }
    }
}
