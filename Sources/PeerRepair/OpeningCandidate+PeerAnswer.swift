import Foundation
public import LiveTimeline

/// `GET /peer/{channel}/opening`: the opening a channel holds for the group's agreement, as peers read it
/// (`PeerRepairer`): `{"msn": 424418401, "programDateTimeMilliseconds": 1795953601400}`; 404 when none is held.
extension OpeningCandidate {
    /// The answer's body.
    public var peerAnswer: String {
        "{\"msn\": \(msn), \"programDateTimeMilliseconds\": \(programDateTimeMilliseconds)}\n"
    }

    /// Reads an answer's body; nil when it is not one.
    public init?(peerAnswer body: [UInt8]) {
        guard let candidate = try? JSONDecoder().decode(OpeningCandidate.self, from: Data(body)) else { return nil }
        self = candidate
    }
}
