/// Why a push was refused. Carries the HTTP status the encoder should see and a message that says what is wrong.
public struct IngestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// HTTP status code (4xx).
    public let status: Int
    /// Human-readable reason, sent as the response body.
    public let message: String

    public init(status: Int, _ message: String) {
        self.status = status
        self.message = message
    }

    public var description: String { "\(status): \(message)" }

    package static func unknownChannel(_ name: String) -> IngestError {
        IngestError(status: 404, "unknown channel '\(name)' (auto-create is off)")
    }
    package static func unknownRendition(_ channel: String, _ name: String) -> IngestError {
        IngestError(status: 404, "unknown rendition '\(name)' of channel '\(channel)' (auto-create is off)")
    }
    package static func invalidName(_ what: String, _ name: String) -> IngestError {
        IngestError(status: 400, "invalid \(what) name '\(name)': use 1-64 characters of A-Z a-z 0-9 _ -")
    }
    package static func notMedia(_ detail: String) -> IngestError {
        IngestError(status: 415, "not a media segment: \(detail)")
    }
    package static func unprocessable(_ detail: String) -> IngestError {
        IngestError(status: 422, detail)
    }
    package static func tooLarge(_ size: Int, limit: Int) -> IngestError {
        IngestError(status: 413, "body of \(size) bytes exceeds the limit of \(limit) bytes")
    }
    package static func notPushed(_ channel: String) -> IngestError {
        IngestError(status: 409, "channel '\(channel)' is fed by the built-in test source and takes no pushes")
    }
}

/// Names of channels and renditions: safe in URLs and file names.
public enum OriginNames {
    /// True for 1-64 characters of `A-Z a-z 0-9 _ -`.
    public static func isValid(_ name: String) -> Bool {
        guard (1...64).contains(name.utf8.count) else { return false }
        return name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x5F || byte == 0x2D
        }
    }
}
