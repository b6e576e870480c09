import CMicroHTTPD
import Glibc

/// A byte range of an open file, for a response body that libmicrohttpd sends straight from the file (sendfile
/// where it can, see `HTTPBody.file`). Owns a read-only descriptor and closes it when the last reference goes;
/// every libmicrohttpd response gets its own descriptor for the same file, which libmicrohttpd closes.
///
/// A response is answered 500 if the file is already shorter than its body when the response is built. The file
/// must not shrink while responses over it are being sent: libmicrohttpd 0.9.75 then stalls the connection (seen:
/// neither sends nor closes for 5 s; its idle timeout should end it).
public final class FileRegion: Sendable {
    /// The read-only descriptor this region owns.
    let descriptor: Int32
    /// The bytes of the file the region covers (file offsets).
    public let range: Range<Int>

    /// Bytes in the region.
    public var count: Int { range.count }

    /// Takes ownership of `descriptor` (open for reading, blocking mode), closed on deinit. Nothing is checked
    /// against the file: the caller knows the file holds `range`.
    /// - Parameters:
    ///   - descriptor: an open, readable file descriptor; the region closes it.
    ///   - range: the file offsets the region covers; must not be negative.
    public init(adopting descriptor: Int32, range: Range<Int>) {
        precondition(descriptor >= 0 && range.lowerBound >= 0, "FileRegion needs a descriptor and a non-negative range")
        self.descriptor = descriptor
        self.range = range
    }

    /// Opens the file at `path` read-only and checks that it holds `range`.
    /// - Parameters:
    ///   - path: the file.
    ///   - range: the file offsets to cover; nil covers the whole file as it is now.
    /// - Throws: `FileRegionError` if the file cannot be opened or is shorter than `range`.
    public convenience init(path: String, range: Range<Int>? = nil) throws(FileRegionError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileRegionError(path: path, reason: String(cString: strerror(errno))) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw FileRegionError(path: path, reason: reason)
        }
        let size = Int(status.st_size)
        let covered = range ?? 0..<size
        guard covered.lowerBound >= 0, covered.upperBound <= size else {
            close(descriptor)
            throw FileRegionError(path: path, reason: "the file has \(size) bytes, fewer than the range \(covered)")
        }
        self.init(adopting: descriptor, range: covered)
    }

    deinit { close(descriptor) }

    /// Whether libmicrohttpd sends file bodies with sendfile() over plain (not TLS) connections.
    public static let sendsWithSendfile = MHD_is_feature_supported(.FEATURE_SENDFILE) == .YES

    /// Whether libmicrohttpd reads files at explicit offsets (pread), so that descriptors sharing one file offset
    /// (`dup`) may be read by several connections at once.
    public static let readsAtExplicitOffsets = MHD_is_feature_supported(.FEATURE_RESPONSES_SHARED_FD) == .YES

    /// A new descriptor for the same file, for libmicrohttpd to own and close; -1 if none could be had (errno
    /// tells why, e.g. EMFILE). A `dup` shares the file offset with this region's descriptor, which is harmless when
    /// libmicrohttpd reads at explicit offsets; otherwise the file is opened anew through /proc/self/fd, which
    /// gives a descriptor with its own offset.
    func descriptorForResponse() -> Int32 {
        if Self.readsAtExplicitOffsets { return fcntl(descriptor, F_DUPFD_CLOEXEC, 0) }
        return open("/proc/self/fd/\(descriptor)", O_RDONLY | O_CLOEXEC)
    }
}

/// A file that could not be made into a `FileRegion`.
public struct FileRegionError: Error, CustomStringConvertible {
    /// The file.
    public let path: String
    /// What went wrong.
    public let reason: String

    public var description: String { "cannot serve \(path): \(reason)" }
}
