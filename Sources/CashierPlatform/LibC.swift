@_exported import CCashierPlatform

// The one place Cashier names its C library. Every module of the package imports
// CashierPlatform instead of repeating this stanza, and gets the C library with it, plus the
// names of CCashierPlatform (the `_GNU_SOURCE` symbols Swift cannot spell).
#if canImport(Darwin)
@_exported import Darwin
#elseif canImport(Glibc)
@_exported import Glibc
#elseif canImport(Musl)
@_exported import Musl
#endif
