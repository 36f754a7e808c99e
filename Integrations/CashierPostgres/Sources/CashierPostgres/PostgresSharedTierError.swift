/// Why a call of ``PostgresSharedTier`` failed without an answer from PostgreSQL.
///
/// Errors PostgreSQL itself reports (a missing privilege, say) are postgres-nio's `PSQLError`.
public enum PostgresSharedTierError: Error, Hashable, Sendable {
    /// The call waited ``PostgresSharedTier/Options/operationTimeout`` for a connection or an
    /// answer and gave up.
    case timedOut(operation: String, after: Duration)
    /// PostgreSQL could not be reached a moment ago; the call was not tried. The tier tries again
    /// after ``PostgresSharedTier/Options/retryDelay``.
    case unreachable
}

extension PostgresSharedTierError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .timedOut(let operation, let duration):
            "PostgreSQL did not answer \(operation) within \(duration)"
        case .unreachable:
            "PostgreSQL could not be reached a moment ago; not tried again yet"
        }
    }
}
