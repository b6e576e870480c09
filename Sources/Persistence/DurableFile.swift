public import Foundation
import Glibc

/// The one way the origin writes a file that must survive a crash (also `kill -9` or a power cut): the bytes go to
/// `{path}.tmp`, which is fsync'd and renamed over `path`, then the directory is fsync'd. After a crash the file
/// holds the old or the new contents, never a torn mix.
public enum DurableFile {
    /// Replaces `path` with `data` atomically and durably; creates the directory if needed. Returns only once the
    /// new contents are on disk. `permissions` (e.g. 0o600 for key material) is set on the new file before any byte
    /// is written; nil: 0o644 less the umask.
    /// - Throws: ``DurableWriteError`` naming the step that failed; the temporary file is removed and `path` keeps
    ///   its old contents (unless only the final directory fsync failed: then the new contents are in place but may
    ///   not survive a power cut).
    public static func replace(
        _ path: String, with data: Data, permissions: mode_t? = nil
    ) throws(DurableWriteError) {
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = path + ".tmp"
        let mode = permissions ?? 0o644
        var descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        if descriptor < 0, errno == ENOENT {
            // Only the first write into a new directory pays for creating it.
            try makeDirectories(directory)
            descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        }
        guard descriptor >= 0 else { throw .failed("open \(temporary)") }
        // A temporary file left by a crash keeps its old mode through O_TRUNC.
        if let permissions, fchmod(descriptor, permissions) != 0 {
            let error = DurableWriteError.failed("chmod \(temporary)")
            close(descriptor)
            unlink(temporary)
            throw error
        }
        let failure: DurableWriteError? = data.withUnsafeBytes { raw -> DurableWriteError? in
            var written = 0
            while written < raw.count {
                let result = write(descriptor, raw.baseAddress! + written, raw.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    return .failed("write \(temporary)")
                }
                written += result
            }
            return fsync(descriptor) == 0 ? nil : .failed("fsync \(temporary)")
        }
        close(descriptor)
        if let failure {
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, path) == 0 else {
            let error = DurableWriteError.failed("rename \(temporary)")
            unlink(temporary)
            throw error
        }
        try syncDirectory(directory)
    }

    /// Creates `directory` and its missing parents, each made durable in its parent (fsync of the parent): a crash
    /// after it returned never loses the directory, nor what is written into it. An existing directory is fine.
    public static func makeDirectories(_ directory: String) throws(DurableWriteError) {
        do {
            try PosixFileIO().makeDirectoriesDurably(directory)
        } catch {
            throw DurableWriteError("create directory \(directory): \(error)")
        }
    }

    /// Makes the names in `directory` durable (fsync of the directory).
    public static func syncDirectory(_ directory: String) throws(DurableWriteError) {
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryDescriptor >= 0 else { throw .failed("open \(directory)") }
        defer { close(directoryDescriptor) }
        guard fsync(directoryDescriptor) == 0 else { throw .failed("fsync \(directory)") }
    }
}

/// A durable write that failed, and at which step.
public struct DurableWriteError: Error, Sendable, CustomStringConvertible {
    /// What failed, e.g. `fsync /data/channels/ch.state.json.tmp: No space left on device`.
    public let message: String

    init(_ message: String) {
        self.message = message
    }

    /// The failed operation with the current `errno`'s description.
    static func failed(_ operation: String) -> DurableWriteError {
        DurableWriteError("\(operation): \(String(cString: strerror(errno)))")
    }

    public var description: String { message }
}
