/// Why an `HTTPServer` could not start.
public struct HTTPServerError: Error, CustomStringConvertible, Equatable {
    private enum Code: Equatable {
        case invalidConfiguration
        case startFailed
        case alreadyStarted
        case invalidCertificate
    }

    private let code: Code
    /// A message that says what went wrong, including libmicrohttpd's reason when it gave one.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The configuration has a value the server cannot use (e.g. a host that is not a numeric address).
    public static func invalidConfiguration(_ message: String) -> HTTPServerError {
        HTTPServerError(.invalidConfiguration, message)
    }

    /// libmicrohttpd refused to start (e.g. the port is in use).
    public static func startFailed(_ message: String) -> HTTPServerError {
        HTTPServerError(.startFailed, message)
    }

    /// A TLS certificate or key that cannot be used (not PEM, encrypted key, key not matching the certificate).
    public static func invalidCertificate(_ message: String) -> HTTPServerError {
        HTTPServerError(.invalidCertificate, message)
    }

    /// `start()` was called on a server that is running or was stopped.
    public static let alreadyStarted = HTTPServerError(.alreadyStarted, "the HTTP server was already started")

    public var description: String { message }
}
