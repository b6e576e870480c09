import Foundation
import SharedBytes

/// The I/O around ``StreamChecker``: loads the URL, reloads each media playlist every ``pollInterval``, downloads
/// what the checker asks for (new segments at once, removed ones when due), one request at a time, for the time
/// given, and returns the checker's report.
public struct StreamWatcher: Sendable {
    /// Why a watch could not start (the command's exit status 2).
    public struct Unreachable: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The multivariant or media playlist URL (`http://` only).
    public var url: String
    /// How long to watch.
    public var duration: Duration
    /// How often each media playlist is reloaded. Default: 500 ms (a quarter of a 2 s target duration, so a stall is
    /// seen within half a second).
    public var pollInterval: Duration
    public var client: HTTPGetClient

    /// Creates a watcher.
    /// - Parameters:
    ///   - url: the stream's multivariant or media playlist URL.
    ///   - duration: how long to watch.
    ///   - pollInterval: how often each media playlist is reloaded. Default: 500 ms.
    ///   - client: the HTTP client. Default: 10 s timeouts.
    public init(
        url: String, duration: Duration, pollInterval: Duration = .milliseconds(500),
        client: HTTPGetClient = HTTPGetClient()
    ) {
        self.url = url
        self.duration = duration
        self.pollInterval = pollInterval
        self.client = client
    }

    /// Watches the stream and reports. Blocks the calling thread for ``duration`` (plus the last removed segments'
    /// fetches).
    /// - Throws: ``Unreachable`` when the URL does not answer 200 with a playlist.
    public func run() throws(Unreachable) -> ValidationReport {
        let origin = ContinuousClock.now
        let end = Self.milliseconds(duration)
        let interval = max(Self.milliseconds(pollInterval), 50)
        var checker = StreamChecker(url: url)
        let first = client.fetch(url, since: origin)
        guard let status = first.status else { throw Unreachable(description: "\(url): \(first.outcome)") }
        guard status == 200 else { throw Unreachable(description: "\(url): status \(status)") }
        guard let text = String(validating: first.body, as: UTF8.self), text.hasPrefix("#EXTM3U") else {
            throw Unreachable(description: "\(url): not a playlist (the answer does not start with #EXTM3U)")
        }

        var playlists: [String]
        var pending: [SegmentRequest] = []
        var nextPoll: [String: Int64] = [:]
        if StreamChecker.isMultivariant(text) {
            playlists = checker.observeMultivariant(first)
        } else {
            playlists = [url]
            pending += checker.observeMediaPlaylist(url, first)
            nextPoll[url] = first.sent + interval
        }

        while true {
            var now = HTTPGetClient.milliseconds(since: origin)
            if now >= end { break }
            for playlist in playlists where nextPoll[playlist, default: 0] <= now {
                let fetch = client.fetch(playlist, since: origin)
                nextPoll[playlist] = fetch.sent + interval
                pending += checker.observeMediaPlaylist(playlist, fetch)
                pending = fetchDue(pending, into: &checker, origin: origin)
            }
            pending = fetchDue(pending, into: &checker, origin: origin)
            now = HTTPGetClient.milliseconds(since: origin)
            let wake = min(nextPoll.values.min() ?? end, pending.map(\.notBefore).min() ?? end, end)
            if wake > now { usleep(UInt32(min(wake - now, 1000)) * 1000) }
        }
        // Removed segments not yet due are still within the time they must stay: fetch them now.
        for request in pending {
            checker.observeSegment(request, client.fetch(request.url, since: origin))
        }
        if StreamChecker.isMultivariant(text) {
            _ = checker.observeMultivariant(client.fetch(url, since: origin))
        }
        return checker.finish(at: HTTPGetClient.milliseconds(since: origin))
    }

    /// Fetches the requests that are due (init sections first, then segments in MSN order); returns the rest.
    private func fetchDue(
        _ pending: [SegmentRequest], into checker: inout StreamChecker, origin: ContinuousClock.Instant
    ) -> [SegmentRequest] {
        let now = HTTPGetClient.milliseconds(since: origin)
        let due = pending.filter { $0.notBefore <= now }.sorted {
            ($0.purpose == .initSection ? 0 : 1, $0.msn) < ($1.purpose == .initSection ? 0 : 1, $1.msn)
        }
        for request in due {
            checker.observeSegment(request, client.fetch(request.url, since: origin))
        }
        return pending.filter { $0.notBefore > now }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.wholeMilliseconds
    }
}
