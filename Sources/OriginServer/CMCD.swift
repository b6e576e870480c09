import Logging
import MicroHTTPD
import OriginCore
import Synchronization

/// What a player said about itself in one request (CTA-5004 Common Media Client Data), read from the `CMCD` query
/// argument and the `CMCD-Request`, `CMCD-Object`, `CMCD-Status` and `CMCD-Session` headers. Each field must be an
/// RFC 8941 Dictionary (one that does not parse is ignored whole); each key must have its CTA-5004 type and range
/// (one that does not is ignored alone); unknown keys are ignored. Only the checked values are kept, so nothing a
/// client sent is echoed or logged as it was sent.
struct CMCDReport: Sendable, Equatable {
    /// `bl`: buffer length, ms (a non-negative Integer).
    var bufferLengthMilliseconds: Int64?
    /// `bs`: the buffer starved since the previous request.
    var bufferStarvation = false
    /// `mtp`: measured throughput, kbps (a non-negative Integer).
    var measuredThroughputKbps: Int64?
    /// `br`: encoded bitrate of the object, kbps.
    var encodedBitrateKbps: Int64?
    /// `sid`: session id (a String of at most 64 characters).
    var sessionID: String?
    /// `cid`: content id (a String of at most 64 characters).
    var contentID: String?
    /// `ot`: object type (a Token of CTA-5004's list).
    var objectType: String?
    /// `st`: stream type (`v` or `l`).
    var streamType: String?
    /// `su`: startup: the object is needed urgently.
    var startup = false

    /// True when no key was taken.
    var isEmpty: Bool { self == CMCDReport() }

    /// The headers that carry CMCD (CTA-5004 section 3.2).
    static let headerNames = ["CMCD-Request", "CMCD-Object", "CMCD-Status", "CMCD-Session"]
    /// The query argument that carries CMCD (CTA-5004 section 3.3).
    static let queryName = "CMCD"
    /// Longest `sid` or `cid` (CTA-5004).
    static let maximumIdentifierLength = 64
    static let objectTypes: Set<String> = ["m", "a", "v", "av", "i", "c", "tt", "k", "o"]

    /// The CMCD of `request`; nil when it carries none (or nothing valid).
    init?(_ request: HTTPRequestHead) {
        var report = CMCDReport()
        var carried = false
        for argument in request.query where argument.name == Self.queryName {
            carried = true
            if let value = argument.value { report.take(value) }
        }
        for (name, value) in request.headers
        where name.utf8.count > 5 && name.utf8.prefix(5).elementsEqual("cmcd-".utf8, by: Self.sameLetter) {
            guard Self.headerNames.contains(where: { $0.utf8.elementsEqual(name.utf8, by: Self.sameLetter) }) else {
                continue
            }
            carried = true
            report.take(value)
        }
        guard carried, !report.isEmpty else { return nil }
        self = report
    }

    init() {}

    private static func sameLetter(_ a: UInt8, _ b: UInt8) -> Bool { a | 0x20 == b | 0x20 }

    /// Takes the valid keys of one field (a Dictionary); the whole field is ignored if it does not parse.
    mutating func take(_ field: String) {
        guard let members = StructuredField.parseDictionary(field) else { return }
        for (key, member) in members {
            guard case .item(let item) = member else { continue }
            switch (key, item.value) {
            case ("bl", .integer(let value)) where value >= 0: bufferLengthMilliseconds = value
            case ("mtp", .integer(let value)) where value >= 0: measuredThroughputKbps = value
            case ("br", .integer(let value)) where value >= 0: encodedBitrateKbps = value
            case ("bs", .boolean(let value)): bufferStarvation = value
            case ("su", .boolean(let value)): startup = value
            case ("sid", .string(let value)) where !value.isEmpty && value.utf8.count <= Self.maximumIdentifierLength:
                sessionID = value
            case ("cid", .string(let value)) where !value.isEmpty && value.utf8.count <= Self.maximumIdentifierLength:
                contentID = value
            case ("ot", .token(let value)) where Self.objectTypes.contains(value): objectType = value
            case ("st", .token(let value)) where value == "v" || value == "l": streamType = value
            default: continue
            }
        }
    }

    /// The log metadata of the report: checked values only. The client's strings (`sid`, `cid`) are written as
    /// sf-strings, quoted with `"` and `\` escaped, so that one cannot forge `key=value` pairs in a log line.
    var logMetadata: Logger.Metadata {
        var metadata: Logger.Metadata = [:]
        if let sessionID, let quoted = StructuredField.serializeString(sessionID) { metadata["cmcd.sid"] = "\(quoted)" }
        if let contentID, let quoted = StructuredField.serializeString(contentID) { metadata["cmcd.cid"] = "\(quoted)" }
        if let bufferLengthMilliseconds { metadata["cmcd.bl"] = "\(bufferLengthMilliseconds)" }
        if bufferStarvation { metadata["cmcd.bs"] = "true" }
        if let measuredThroughputKbps { metadata["cmcd.mtp"] = "\(measuredThroughputKbps)" }
        if let encodedBitrateKbps { metadata["cmcd.br"] = "\(encodedBitrateKbps)" }
        if let objectType { metadata["cmcd.ot"] = "\(objectType)" }
        if let streamType { metadata["cmcd.st"] = "\(streamType)" }
        if startup { metadata["cmcd.su"] = "true" }
        return metadata
    }
}

/// A Prometheus histogram with fixed bounds over non-negative integer observations in a base unit's fraction
/// (`scale` observations make one base unit: 1000 for ms -> seconds, 1/1000 for kbps -> bit/s is `multiplier`).
struct FixedHistogram: Sendable {
    /// Upper bounds in observation units, ascending.
    let bounds: [Int64]
    private(set) var buckets: [Int]
    private(set) var count = 0
    /// Sum in observation units, saturating (a client's value is at most 15 digits, so it takes 10^3 of the largest
    /// to saturate).
    private(set) var sum: Int64 = 0

    init(bounds: [Int64]) {
        self.bounds = bounds
        buckets = Array(repeating: 0, count: bounds.count)
    }

    mutating func observe(_ value: Int64) {
        if let index = bounds.firstIndex(where: { value <= $0 }) { buckets[index] += 1 }
        count += 1
        let (added, overflow) = sum.addingReportingOverflow(value)
        sum = overflow ? .max : added
    }

    /// `_bucket` (cumulative, `+Inf` last), `_sum` and `_count` lines with `labels` (`channel="x"`), the bounds and
    /// sum shown in base units by `format`.
    func lines(_ name: String, labels: String, format: (Int64) -> String) -> String {
        var out = ""
        var cumulative = 0
        for (bound, bucket) in zip(bounds, buckets) {
            cumulative += bucket
            out += "\(name)_bucket{\(labels),le=\"\(format(bound))\"} \(cumulative)\n"
        }
        out += "\(name)_bucket{\(labels),le=\"+Inf\"} \(count)\n"
        out += "\(name)_sum{\(labels)} \(format(sum))\n"
        out += "\(name)_count{\(labels)} \(count)\n"
        return out
    }
}

/// CMCD counted per channel for `/metrics`: requests carrying it, distinct sessions (`sid`) seen in the last
/// `sessionWindowMilliseconds` (at most `maximumSessions` remembered per channel: beyond that new ones are counted
/// in `hlsorigin_cmcd_untracked_requests_total` until old ones expire), starvation events (`bs`), and histograms of
/// buffer length (`bl`, seconds) and measured throughput (`mtp`, bytes per second). Channels are only those the
/// origin has (a request names an existing channel before it is counted), so labels stay bounded.
final class CMCDStatistics: Sendable {
    static let sessionWindowMilliseconds: Int64 = 300_000
    static let maximumSessions = 4096
    /// `bl` bounds, ms: 0.1 s to 60 s.
    static let bufferBounds: [Int64] = [100, 500, 1000, 2000, 4000, 8000, 15000, 30000, 60000]
    /// `mtp` bounds, kbps: 250 kbit/s to 100 Mbit/s.
    static let throughputBounds: [Int64] = [250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 100_000]

    /// A full table is swept at most this often (ms), however spread the sessions' last-seen times are.
    static let sweepIntervalMilliseconds: Int64 = 10_000

    private struct PerChannel {
        var requests = 0
        var starvations = 0
        var untrackedRequests = 0
        var bufferLength = FixedHistogram(bounds: CMCDStatistics.bufferBounds)
        var throughput = FixedHistogram(bounds: CMCDStatistics.throughputBounds)
        /// Session id hash -> last seen, ms.
        var sessions: [Int: Int64] = [:]
        /// When a full table may be swept next (ms): not before its oldest session expires. A new session meeting
        /// a full table before then is counted as untracked at once, without a pass over the table.
        var nextSweep = Int64.min
        /// Sweeps of the full table so far (tests read it).
        var sweeps = 0

        mutating func see(session: String, now: Int64) {
            let key = session.hashValue
            if sessions[key] == nil, sessions.count >= CMCDStatistics.maximumSessions {
                if now >= nextSweep { sweep(now: now) }
                if sessions.count >= CMCDStatistics.maximumSessions {
                    untrackedRequests += 1
                    return
                }
            }
            sessions[key] = now
        }

        /// Removes the expired sessions in place and sets when the next sweep is due.
        private mutating func sweep(now: Int64) {
            sweeps += 1
            let window = CMCDStatistics.sessionWindowMilliseconds
            var oldest = Int64.max
            var expired: [Int] = []
            for (key, seen) in sessions {
                if now - seen >= window { expired.append(key) } else { oldest = min(oldest, seen) }
            }
            for key in expired { sessions.removeValue(forKey: key) }
            let due = oldest == .max ? now : oldest + window
            nextSweep = max(due, now + CMCDStatistics.sweepIntervalMilliseconds)
        }

        mutating func record(_ report: CMCDReport, now: Int64) {
            requests += 1
            if report.bufferStarvation { starvations += 1 }
            if let bl = report.bufferLengthMilliseconds { bufferLength.observe(bl) }
            if let mtp = report.measuredThroughputKbps { throughput.observe(mtp) }
            if let sid = report.sessionID { see(session: sid, now: now) }
        }

        func activeSessions(now: Int64) -> Int {
            sessions.values.count { now - $0 < CMCDStatistics.sessionWindowMilliseconds }
        }
    }

    /// One channel's figures behind its own lock: channels do not wait on each other.
    private final class Locked: Sendable {
        let state = Mutex(PerChannel())
    }

    private let channels = Mutex<[String: Locked]>([:])

    init() {}

    private func locked(_ channel: String) -> Locked {
        channels.withLock { channels in
            if let existing = channels[channel] { return existing }
            let created = Locked()
            channels[channel] = created
            return created
        }
    }

    /// Counts `report`, sent to channel `channel` at `now` (ms).
    func count(_ report: CMCDReport, channel: String, now: Int64) {
        locked(channel).state.withLock { $0.record(report, now: now) }
    }

    /// Distinct sessions of `channel` seen in the window (tests read it).
    func sessions(channel: String, now: Int64) -> Int {
        channels.withLock { $0[channel] }?.state.withLock { $0.activeSessions(now: now) } ?? 0
    }

    /// Sessions of `channel` remembered, expired or not, and sweeps of its full table (tests read them).
    func sessionTable(channel: String) -> (remembered: Int, sweeps: Int) {
        channels.withLock { $0[channel] }?.state.withLock { ($0.sessions.count, $0.sweeps) } ?? (0, 0)
    }

    /// The families in the Prometheus text format, for the channels in `names` (others are dropped: a channel
    /// removed by a reload stops being shown and its counts are freed).
    func exposition(channels names: [String], now: Int64) -> String {
        let current = channels.withLock { channels -> [(String, Locked)] in
            let keep = Set(names)
            channels = channels.filter { keep.contains($0.key) }
            return channels.sorted { $0.key < $1.key }
        }
        .map { ($0.0, $0.1.state.withLock { $0 }) }
        func family(_ name: String, _ type: String, _ help: String, _ body: (String, PerChannel) -> String) -> String {
            "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
                + current.map { body("channel=\"\($0.0)\"", $0.1) }.joined()
        }
        return family(
            "hlsorigin_cmcd_requests_total", "counter", "Requests to the channel that carried valid CMCD (CTA-5004)."
        ) { "hlsorigin_cmcd_requests_total{\($0)} \($1.requests)\n" }
            + family(
                "hlsorigin_cmcd_sessions", "gauge",
                "Distinct CMCD session ids (sid) seen in the last \(Self.sessionWindowMilliseconds / 1000) s "
                    + "(at most \(Self.maximumSessions) per channel)."
            ) { "hlsorigin_cmcd_sessions{\($0)} \($1.activeSessions(now: now))\n" }
            + family(
                "hlsorigin_cmcd_untracked_requests_total", "counter",
                "CMCD requests of a new session not remembered because the channel's session table was full."
            ) { "hlsorigin_cmcd_untracked_requests_total{\($0)} \($1.untrackedRequests)\n" }
            + family(
                "hlsorigin_cmcd_buffer_starvations_total", "counter",
                "Buffer starvations players reported (CMCD bs: the buffer ran dry since the previous request)."
            ) { "hlsorigin_cmcd_buffer_starvations_total{\($0)} \($1.starvations)\n" }
            + family(
                "hlsorigin_cmcd_buffer_length_seconds", "histogram",
                "Buffer length players reported with their requests (CMCD bl)."
            ) { $1.bufferLength.lines("hlsorigin_cmcd_buffer_length_seconds", labels: $0, format: Self.seconds) }
            + family(
                "hlsorigin_cmcd_measured_throughput_bytes_per_second", "histogram",
                "Throughput players measured (CMCD mtp, kbit/s: 125 bytes per second each)."
            ) {
                $1.throughput.lines(
                    "hlsorigin_cmcd_measured_throughput_bytes_per_second", labels: $0, format: Self.bytesPerSecond)
            }
    }

    /// Milliseconds as seconds, exactly (`1.5`, `60`).
    static func seconds(_ milliseconds: Int64) -> String {
        let whole = milliseconds / 1000
        let fraction = milliseconds % 1000
        guard fraction != 0 else { return "\(whole)" }
        var digits = String(fraction + 1000).dropFirst()
        while digits.hasSuffix("0") { digits = digits.dropLast() }
        return "\(whole).\(digits)"
    }

    /// kbit/s as bytes per second (Prometheus's base unit; saturating).
    static func bytesPerSecond(_ kbps: Int64) -> String {
        let (product, overflow) = kbps.multipliedReportingOverflow(by: 125)
        return overflow ? "\(Int64.max)" : "\(product)"
    }
}

extension OriginHTTPHandler {
    /// Counts and (with `delivery.cmcd.log`) logs the CMCD of a request to `channel`, if it carries any.
    func noteCMCD(_ request: HTTPRequestHead, channel: Channel) {
        let delivery = configuration.delivery
        guard delivery.cmcdMetrics || delivery.cmcdLog, let report = CMCDReport(request) else { return }
        if delivery.cmcdMetrics { cmcd.count(report, channel: channel.name, now: origin.clock.nowMilliseconds()) }
        if delivery.cmcdLog {
            var metadata = report.logMetadata
            metadata["channel"] = "\(channel.name)"
            logger.info("CMCD", metadata: metadata)
        }
    }
}
