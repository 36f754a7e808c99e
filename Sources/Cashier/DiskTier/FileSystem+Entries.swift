import CashierEntryFormat
import CashierPlatform
import Foundation

/// Entry files read through any ``FileSystem``: open, fstat, then `EntryReader`'s reads.
/// The cache (``DiskTier``) and the `cashier-tool` both read here.
extension FileSystem {
    /// Reads and verifies the entry file at `path`: its header, and its payload as a `Data`
    /// over the one buffer the kernel filled. Never waits, never follows a link, never
    /// allocates more than the validated header claims (at most `EntryHeader.maximumEntryLength`).
    package func readEntry(_ path: String) -> DiskTier.ReadResult {
        switch readEntryFile(path, wantsPayload: true) {
        case .failure(let error):
            return error.code == ENOENT || error.code == ENOTDIR ? .absent : .failed(error)
        case .success((.entry(let header, let payload), let info)):
            return .entry(header, payload: payload ?? Data(), info: info)
        case .success((.damaged(let error, let header), let info)):
            return .damaged(error, info: info, header: header)
        case .success((.outOfMemory, _)):
            return .failed(SystemError(code: ENOMEM, operation: "read", path: path))
        }
    }

    /// Reads the header of the entry file at `path` (checksum not verified), reading no more
    /// of the file than the header.
    package func readEntryHeader(_ path: String) -> Result<(EntryHeader, FileInfo), DiskTier.HeaderFailure> {
        switch readEntryFile(path, wantsPayload: false) {
        case .failure(let error):
            return .failure(error.code == ENOENT || error.code == ENOTDIR ? .absent : .failed(error))
        case .success((.entry(let header, _), let info)):
            return .success((header, info))
        case .success((.damaged(let error, _), let info)):
            return .failure(.damaged(error, size: info.size))
        case .success((.outOfMemory, _)):
            return .failure(.failed(SystemError(code: ENOMEM, operation: "read", path: path)))
        }
    }

    private func readEntryFile(_ path: String, wantsPayload: Bool) -> Result<
        (EntryReader.Outcome, FileInfo), SystemError
    > {
        let file: OpenFile
        do {
            file = try openForReading(path)
        } catch {
            return .failure(error)
        }
        defer { closeFile(file) }
        // A FIFO, socket, device or folder in an entry's place: damage, never read or waited on.
        guard file.info.isRegularFile else { return .success((.damaged(.notAFile, header: nil), file.info)) }
        return Result { () throws(SystemError) in
            let outcome = try EntryReader.read(size: file.info.size, wantsPayload: wantsPayload) {
                buffer, offset throws(SystemError) in
                try readFile(file, into: buffer, at: offset)
            }
            return (outcome, file.info)
        }
    }
}
