import CashierPlatform
import Foundation

/// Every file-system call Cashier makes: the seam tests use to inject failures.
///
/// ``POSIXFileSystem`` is the real one. All paths are absolute.
package protocol FileSystem: Sendable {
    func createDirectory(_ path: String, permissions: mode_t) throws(SystemError)
    /// Creates `path` exclusively, writes `header` then `payload`, optionally syncs, closes.
    /// On failure the file may exist and the caller removes it.
    /// With `completeProtection`, Apple data protection is set on the empty file before the first byte.
    func writeNewFile(
        _ path: String, permissions: mode_t, completeProtection: Bool, header: UnsafeRawBufferPointer,
        payload: UnsafeRawBufferPointer, synchronize: Bool) throws(SystemError)
    func rename(_ source: String, to destination: String) throws(SystemError)
    func synchronizeDirectory(_ path: String) throws(SystemError)
    func removeFile(_ path: String) throws(SystemError)
    /// Opens `path` for reading and `stat`s it (open, fstat): never waits on a FIFO, never
    /// follows a symbolic link (Platform+Reading.swift). Entry files are read through
    /// ``readEntry(_:)`` and ``readEntryHeader(_:)`` (FileSystem+Entries.swift), which
    /// decide how much to read; release the file with ``closeFile(_:)``.
    func openForReading(_ path: String) throws(SystemError) -> OpenFile
    /// Fills `buffer` with the file's bytes from `offset` (`pread`): fewer only where the file ends.
    func readFile(_ file: OpenFile, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(SystemError)
        -> Int
    func closeFile(_ file: OpenFile)
    func contentsOfDirectory(_ path: String) throws(SystemError) -> [String]
    /// `stat` of `directory/name` (following a symbolic link), `nil` if it does not exist.
    func info(_ name: String, in directory: String) -> FileInfo?
    /// Every name in `directory` and, for those `wanted` accepts, its `stat`: one
    /// `readdir` pass and one `fstatat` per wanted name. `nil` info: vanished meanwhile.
    func scan(_ directory: String, statting wanted: (String) -> Bool) throws(SystemError) -> [(
        name: String, info: FileInfo?
    )]
    /// Bytes available to this user on the volume holding `path`.
    func availableCapacity(_ path: String) -> Int?
    /// Takes an exclusive advisory lock (`flock`) on `path`, creating it; returns a token for ``unlock(_:)``.
    func lockExclusively(_ path: String) throws(SystemError) -> Int32
    func unlock(_ token: Int32)
    /// Like ``lockExclusively(_:)`` but never waits: `nil` when another process holds the lock.
    func tryLockExclusively(_ path: String) throws(SystemError) -> Int32?
    /// Sets `path`'s access time to `seconds` since 1970, leaving its modification time:
    /// how an entry's last use is kept across launches (see `FileSystem+Recency.swift`).
    func setAccessTime(_ path: String, to seconds: Double) throws(SystemError)
}

/// A file open for reading: its descriptor, and its `stat` when it was opened.
package struct OpenFile: Sendable {
    package var descriptor: Int32
    package var info: FileInfo
    package var path: String

    package init(descriptor: Int32, info: FileInfo, path: String) {
        self.descriptor = descriptor
        self.info = info
        self.path = path
    }
}

extension FileSystem {
    /// Reads with `pread` on the descriptor ``openForReading(_:)`` returned, retrying on `EINTR`.
    package func readFile(_ file: OpenFile, into buffer: UnsafeMutableRawBufferPointer, at offset: Int)
        throws(SystemError) -> Int
    {
        var filled = 0
        while filled < buffer.count {
            let count = pread(
                file.descriptor, buffer.baseAddress! + filled, buffer.count - filled, off_t(offset + filled))
            if count < 0 {
                if errno == EINTR { continue }
                throw SystemError(code: errno, operation: "read", path: file.path)
            }
            if count == 0 { break }
            filled += count
        }
        return filled
    }

    package func closeFile(_ file: OpenFile) {
        _ = close(file.descriptor)
    }

    /// Test doubles that do not model other processes take the lock as ``lockExclusively(_:)`` does.
    package func tryLockExclusively(_ path: String) throws(SystemError) -> Int32? {
        try lockExclusively(path)
    }

    package func scan(_ directory: String, statting wanted: (String) -> Bool) throws(SystemError) -> [(
        name: String, info: FileInfo?
    )] {
        try contentsOfDirectory(directory).map { name in (name, wanted(name) ? info(name, in: directory) : nil) }
    }
}

/// The real file system, through POSIX calls (Glibc, Musl or Darwin).
package struct POSIXFileSystem: FileSystem {
    package init() {}

    /// Makes `path` and any missing parent with exactly `permissions` (`mkdir` then `chmod`:
    /// the umask may strip group bits a shared cache asks for, and `mkdir` ignores setgid).
    package func createDirectory(_ path: String, permissions: mode_t) throws(SystemError) {
        if mkdir(path, permissions) == 0 {
            try setMode(path, permissions)
            return
        }
        let code = errno
        if code == EEXIST {
            var st = stat()
            if stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR { return }
            throw SystemError(code: ENOTDIR, operation: "mkdir", path: path)
        }
        guard code == ENOENT else { throw SystemError(code: code, operation: "mkdir", path: path) }
        let parent = (path as NSString).deletingLastPathComponent
        guard !parent.isEmpty, parent != path else { throw SystemError(code: code, operation: "mkdir", path: path) }
        try createDirectory(parent, permissions: permissions)
        if mkdir(path, permissions) == 0 { return try setMode(path, permissions) }
        if errno != EEXIST { throw SystemError(code: errno, operation: "mkdir", path: path) }
    }

    /// `chmod` of a folder just made: exactly `permissions`, whatever the umask took away.
    private func setMode(_ path: String, _ permissions: mode_t) throws(SystemError) {
        guard chmod(path, permissions) == 0 else { throw SystemError(code: errno, operation: "chmod", path: path) }
    }

    package func writeNewFile(
        _ path: String, permissions: mode_t, completeProtection: Bool, header: UnsafeRawBufferPointer,
        payload: UnsafeRawBufferPointer, synchronize: Bool
    ) throws(SystemError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions)
        guard fd >= 0 else { throw SystemError(code: errno, operation: "open", path: path) }
        var closed = false
        defer { if !closed { _ = close(fd) } }
        // A umask only takes bits away, so 0600 is what a sane umask leaves; a shared cache's
        // group bits would be stripped by the usual 022, so they are set on the open file.
        if permissions & ~0o700 != 0, fchmod(fd, permissions) != 0 {
            throw SystemError(code: errno, operation: "fchmod", path: path)
        }
        // The file exists and is empty: protect it before its first byte.
        if completeProtection, let code = Platform.protectCompletely(path) {
            throw SystemError(code: code, operation: "set complete data protection", path: path)
        }
        try writeAll(fd, header, payload, path: path)
        if synchronize {
            guard Platform.synchronize(fd, dataOnly: true) == 0 else {
                throw SystemError(code: errno, operation: "fsync", path: path)
            }
        }
        closed = true
        guard close(fd) == 0 else { throw SystemError(code: errno, operation: "close", path: path) }
    }

    private func writeAll(_ fd: Int32, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, path: String)
        throws(SystemError)
    {
        var parts = [first, second].filter { $0.count > 0 }
        while !parts.isEmpty {
            var vectors = parts.map {
                iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count)
            }
            let written = writev(fd, &vectors, Int32(vectors.count))
            if written < 0 {
                if errno == EINTR { continue }
                throw SystemError(code: errno, operation: "write", path: path)
            }
            if written == 0 { throw SystemError(code: EIO, operation: "write", path: path) }
            var remaining = written
            while remaining > 0, let part = parts.first {
                if remaining >= part.count {
                    remaining -= part.count
                    parts.removeFirst()
                } else {
                    parts[0] = UnsafeRawBufferPointer(rebasing: part[remaining...])
                    remaining = 0
                }
            }
        }
    }

    package func rename(_ source: String, to destination: String) throws(SystemError) {
        guard Platform.replace(source, destination) == 0 else {
            throw SystemError(code: errno, operation: "rename", path: destination)
        }
    }

    package func synchronizeDirectory(_ path: String) throws(SystemError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECTORY)
        guard fd >= 0 else { throw SystemError(code: errno, operation: "open", path: path) }
        defer { _ = close(fd) }
        guard Platform.synchronize(fd, dataOnly: false) == 0 else {
            throw SystemError(code: errno, operation: "fsync", path: path)
        }
    }

    package func removeFile(_ path: String) throws(SystemError) {
        guard unlink(path) == 0 || errno == ENOENT else {
            throw SystemError(code: errno, operation: "unlink", path: path)
        }
    }

    /// Opens for reading: never waits (a FIFO in an entry's place), never follows a symbolic
    /// link, and leaves the access time alone where the system allows it (Platform+Reading.swift).
    package func openForReading(_ path: String) throws(SystemError) -> OpenFile {
        let fd = Platform.openForReading(path)
        guard fd >= 0 else { throw SystemError(code: errno, operation: "open", path: path) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let code = errno
            _ = close(fd)
            throw SystemError(code: code, operation: "fstat", path: path)
        }
        return OpenFile(descriptor: fd, info: FileInfo(st), path: path)
    }

    package func contentsOfDirectory(_ path: String) throws(SystemError) -> [String] {
        guard let directory = opendir(path) else { throw SystemError(code: errno, operation: "opendir", path: path) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = String(cString: Self.name(of: entry))
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    package func scan(_ directory: String, statting wanted: (String) -> Bool) throws(SystemError) -> [(
        name: String, info: FileInfo?
    )] {
        guard let handle = opendir(directory) else {
            throw SystemError(code: errno, operation: "opendir", path: directory)
        }
        defer { closedir(handle) }
        // fstatat relative to the open folder: no path to build or resolve per file.
        let descriptor = dirfd(handle)
        var found: [(name: String, info: FileInfo?)] = []
        while let entry = readdir(handle) {
            let cName = Self.name(of: entry)
            let name = String(cString: cName)
            var info: FileInfo?
            if wanted(name) {
                var st = stat()
                info = fstatat(descriptor, cName, &st, 0) == 0 ? FileInfo(st) : nil
            }
            if name != ".", name != ".." { found.append((name, info)) }
        }
        return found
    }

    /// The name of a directory entry, read where `readdir` put it: a `dirent` is as long as its
    /// name needs, so copying the whole 256-byte `d_name` out of it (as `withUnsafeBytes(of:)`
    /// does) reads past the end of the last entry of the buffer (AddressSanitizer found it).
    private static func name(of entry: UnsafeMutablePointer<dirent>) -> UnsafePointer<CChar> {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        return UnsafeRawPointer(entry).advanced(by: offset).assumingMemoryBound(to: CChar.self)
    }

    package func info(_ name: String, in directory: String) -> FileInfo? {
        var st = stat()
        guard stat(directory + "/" + name, &st) == 0 else { return nil }
        return FileInfo(st)
    }

    package func availableCapacity(_ path: String) -> Int? {
        Platform.availableBytes(path)
    }

    /// Opens the lock file, creating it; one another member of a shared cache's group made
    /// (0600, theirs) opens read-only, which is all `flock` needs.
    private func openLockFile(_ path: String) -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        return fd < 0 && errno == EACCES ? open(path, O_RDONLY | O_CLOEXEC) : fd
    }

    package func lockExclusively(_ path: String) throws(SystemError) -> Int32 {
        let fd = openLockFile(path)
        guard fd >= 0 else { throw SystemError(code: errno, operation: "open", path: path) }
        while flock(fd, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            let code = errno
            _ = close(fd)
            throw SystemError(code: code, operation: "flock", path: path)
        }
        return fd
    }

    package func tryLockExclusively(_ path: String) throws(SystemError) -> Int32? {
        let fd = openLockFile(path)
        guard fd >= 0 else { throw SystemError(code: errno, operation: "open", path: path) }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let code = errno
            _ = close(fd)
            if code == EWOULDBLOCK { return nil }
            throw SystemError(code: code, operation: "flock", path: path)
        }
        return fd
    }

    package func unlock(_ token: Int32) {
        _ = flock(token, LOCK_UN)
        _ = close(token)
    }
}
