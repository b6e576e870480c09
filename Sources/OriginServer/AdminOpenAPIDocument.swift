import Foundation
import SharedBytes

/// The admin API's OpenAPI 3.1 description, served at `GET /admin/openapi.json`: the module's resource
/// `Sources/OriginServer/OpenAPI/admin.json` (the one copy in the repository), without the file's final newline.
///
/// SwiftPM copies it into the bundle `hlsorigin_OriginServer.resources`, which sits beside the executable (the build
/// directory; `/usr/lib/hlsorigin` in the Debian package, beside the test source's bundle). It is looked for there,
/// as `Bundle.module` does first, but not through `Bundle.module`: that ends the process (`fatalError`) when the
/// bundle is missing, where the origin logs the problem at start and answers the route 500 saying what is missing.
enum AdminOpenAPIDocument {
    /// The bundle's directory name (SwiftPM's `<package>_<target>.resources`).
    static let bundleName = "hlsorigin_OriginServer.resources"
    /// The document's name in the bundle.
    static let fileName = "admin.json"

    /// The document beside the running executable, read once.
    static let loaded: Result<SharedBytes, AdminOpenAPIDocumentMissing> = load(
        besideExecutableIn: Bundle.main.bundleURL)

    /// The document from the bundle in `directory`; the file's final newline is left out.
    static func load(besideExecutableIn directory: URL) -> Result<SharedBytes, AdminOpenAPIDocumentMissing> {
        let path = directory.appendingPathComponent(bundleName).appendingPathComponent(fileName).path
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(AdminOpenAPIDocumentMissing(path: path))
        }
        var bytes = [UInt8](data)
        if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        return .success(SharedBytes(bytes))
    }
}

/// The description's file is not where the binary looks for it: the resource bundle was not installed beside it.
struct AdminOpenAPIDocumentMissing: Error, CustomStringConvertible {
    /// The path that was read.
    let path: String

    var description: String {
        "the admin API's OpenAPI description \(path) is missing: install the resource bundle "
            + "\(AdminOpenAPIDocument.bundleName) beside the hlsorigin binary"
    }
}
