import LiveTimeline
import Markers
import MicroHTTPD
import OriginCore

/// The one place where what the core reports (ingest receipts, refused pushes, refused marker requests) becomes an
/// HTTP status and body. The core knows nothing of HTTP.
extension OriginHTTPHandler {
    /// 201 for a segment or init section taken, 200 for a playlist hint read (the receipt's message as plain text),
    /// 204 without a body for a file ignored.
    static func answer(_ receipt: IngestReceipt) -> HTTPResponse {
        let status =
            switch receipt.kind {
            case .segment, .initSection: 201
            case .hintRead, .alreadyListed: 200
            case .ignored: 204
            }
        if status == 204 { return HTTPResponse(status: 204) }
        return .text(status, receipt.message + "\n")
    }

    /// A refused push: its status, and the message as plain text (what the encoder logs).
    static func answer(_ error: IngestError) -> HTTPResponse {
        if error.reason == .catchingUp || error.reason == .reloading { return retryLater(error.message) }
        var response = HTTPResponse.text(status(of: error.reason), error.message + "\n")
        if let seconds = error.retryAfterSeconds { response.headers.append(name: "Retry-After", value: "\(seconds)") }
        return response
    }

    /// 503 with `Retry-After: 1`, not stored by caches: what is asked for will be there in a second.
    static func retryLater(_ message: String) -> HTTPResponse {
        var response = HTTPResponse.text(503, message + "\n")
        response.headers.append(name: "Retry-After", value: "1")
        response.headers.append(name: "Cache-Control", value: "no-store")
        return response
    }

    /// HTTP status of a refused push.
    static func status(of reason: IngestError.Reason) -> Int {
        switch reason {
        case .invalidName, .invalidHint: 400
        case .unknownChannel, .unknownRendition: 404
        case .notPushed, .timelineConflict: 409
        case .tooLarge, .hintTooLarge: 413
        case .notMedia: 415
        case .unprocessable, .roleMismatch, .outOfRange, .segmentTooLong, .pushStalled, .implausibleTiming: 422
        case .concurrentPush: 409
        case .aheadOfClock, .memoryLimit, .diskLimit, .creationRate: 429
        case .channelLimit, .renditionLimit: 403
        case .notPersisted: 507
        case .alreadyListed: 200
        case .catchingUp, .reloading: 503
        }
    }

    /// A refused marker request: its status, and `{"error": message, "field": field}` as JSON.
    func answer(_ error: MarkerError) -> HTTPResponse {
        var answer = ["error": error.message]
        if let field = error.field { answer["field"] = field }
        var response = json(Self.status(of: error.reason), answer)
        if error.reason == .unavailable { response.headers.append(name: "Retry-After", value: "1") }
        return response
    }

    /// HTTP status of a refused marker request.
    static func status(of reason: MarkerError.Reason) -> Int {
        switch reason {
        case .invalid: 400
        case .unknownMarker: 404
        case .conflict: 409
        case .tooManyMarkers: 429
        case .notPersisted: 500
        case .unavailable: 503
        }
    }
}
