import Cashier
import Foundation

/// "Did you mean …?" for a mistyped command, option or key.
enum Suggestion {
    /// The candidate closest to `typed`, when it is close enough to be a slip of the keyboard:
    /// at most one edit for a word of up to four characters, two up to eight, three beyond
    /// (a swap of two neighbours counts as one edit). Ties go to the first candidate.
    static func closest(to typed: String, among candidates: some Sequence<String>) -> String? {
        let word = Array(typed.unicodeScalars)
        let allowed = word.count <= 4 ? 1 : word.count <= 8 ? 2 : 3
        var best: (candidate: String, distance: Int)?
        for candidate in candidates where candidate != typed {
            let other = Array(candidate.unicodeScalars)
            // Lengths further apart than the allowance cannot be close: skip the table.
            guard abs(other.count - word.count) <= allowed else { continue }
            let distance = editDistance(word, other)
            if distance <= allowed, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// "; did you mean 'list'?", or nothing.
    static func clause(_ typed: String, among candidates: some Sequence<String>, quote: String = "'") -> String {
        guard let match = closest(to: typed, among: candidates) else { return "" }
        return "; did you mean \(quote)\(Format.escaped(match))\(quote)?"
    }

    /// The keys of the entries in `directory`, for suggesting a key: those of files whose
    /// headers read, and the store's. Reads as `list` reads: nothing changes, not even access times.
    static func keys(in directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory).sorted()) ?? []
        let files = POSIXFileSystem()
        let fileKeys = names.filter(DiskTier.isEntryFileName).compactMap { name -> String? in
            guard case .success(let (header, _)) = files.readEntryHeader(directory + "/" + name) else { return nil }
            return header.key
        }
        // And the store's keys, read from its index through a read-only connection.
        let rowKeys = (try? FolderStore.open(directory, readOnly: true).0?.keys()) ?? []
        let known = Set(fileKeys)
        return fileKeys + rowKeys.filter { !known.contains($0) }
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours.
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], before[j - 2] + 1)
                }
            }
            (before, previous, current) = (previous, current, before)
        }
        return previous[b.count]
    }
}
