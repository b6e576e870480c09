import Foundation

/// What a check concluded.
public enum Verdict: String, Sendable, Codable {
    /// Checked and never broken.
    case pass = "PASS"
    /// Broken at least once; the evidence says where.
    case fail = "FAIL"
    /// Not checked, and why (no PDT, one rendition, no multivariant playlist...).
    case skip = "SKIP"
}

/// One check's line of the report.
public struct CheckResult: Sendable, Codable, Hashable {
    public var check: ValidationCheck
    /// The rule numbers of `../shared/HLS-RULES.md` the check covers (``ValidationCheck/rules``).
    public var rules: [Int]
    public var verdict: Verdict
    /// PASS: what was checked; FAIL: the first failure; SKIP: why.
    public var summary: String
    /// FAIL: every failure recorded, in order (at most ``StreamChecker/evidenceLimit``).
    public var evidence: [String]
    /// FAIL: how many failures there were (more than `evidence` holds when the limit was reached).
    public var failures: Int

    public init(check: ValidationCheck, verdict: Verdict, summary: String, evidence: [String] = [], failures: Int = 0) {
        self.check = check
        self.rules = check.rules
        self.verdict = verdict
        self.summary = summary
        self.evidence = evidence
        self.failures = failures
    }

    /// The report line: `FAIL  17       removed-segments          out.m3u8 MSN 3 (http://.../out3.ts): ...`.
    public var line: String {
        let more = failures > 1 ? " (\(failures) failures)" : ""
        return "\(verdict.rawValue)  \(pad(check.ruleLabel, 8)) \(pad(check.rawValue, 25)) \(summary)\(more)"
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}

/// The outcome of watching a stream: one result per check, in ``ValidationCheck`` order, and what was watched.
public struct ValidationReport: Sendable, Codable, Hashable {
    /// The URL given.
    public var url: String
    /// How long the stream was watched, seconds.
    public var seconds: Double
    /// Media playlists followed.
    public var mediaPlaylists: [String]
    /// Playlist reloads, segments downloaded, removed segments fetched again.
    public var reloads: Int
    public var segmentsDownloaded: Int
    public var removedSegmentsFetched: Int
    public var results: [CheckResult]

    public init(
        url: String, seconds: Double, mediaPlaylists: [String], reloads: Int, segmentsDownloaded: Int,
        removedSegmentsFetched: Int, results: [CheckResult]
    ) {
        self.url = url
        self.seconds = seconds
        self.mediaPlaylists = mediaPlaylists
        self.reloads = reloads
        self.segmentsDownloaded = segmentsDownloaded
        self.removedSegmentsFetched = removedSegmentsFetched
        self.results = results
    }

    /// The result of one check.
    public func result(_ check: ValidationCheck) -> CheckResult? { results.first { $0.check == check } }

    /// The checks that failed.
    public var failed: [ValidationCheck] { results.filter { $0.verdict == .fail }.map(\.check) }

    /// 1 when any check failed, else 0 (the command's exit status).
    public var exitStatus: Int32 { failed.isEmpty ? 0 : 1 }

    /// The summary line: `FAIL: 2 of 28 checks failed (20 PASS, 6 SKIP); 2 media playlists, 60 s, ...`.
    public var summaryLine: String {
        let count = { (verdict: Verdict) in self.results.filter { $0.verdict == verdict }.count }
        let head =
            failed.isEmpty
            ? "PASS: no check failed"
            : "FAIL: \(count(.fail)) of \(results.count) checks failed (\(failed.map(\.rawValue).joined(separator: ", ")))"
        return "\(head); \(count(.pass)) PASS, \(count(.fail)) FAIL, \(count(.skip)) SKIP; "
            + "\(mediaPlaylists.count) media playlist\(mediaPlaylists.count == 1 ? "" : "s") watched "
            + "\(String(format: "%.1f", seconds)) s: \(reloads) reloads, \(segmentsDownloaded) segments, "
            + "\(removedSegmentsFetched) removed segments fetched again"
    }

    /// The text report: a header, one line per check, the summary line; every line ends with `\n`.
    public var text: String {
        var text = "hlsorigin validate \(url)\n"
        for result in results { text += result.line + "\n" }
        text += summaryLine + "\n"
        return text
    }

    /// The same report as a JSON document (keys sorted, pretty-printed), with `summary` and `exitStatus` added.
    public var json: String {
        struct Document: Encodable {
            var report: ValidationReport
            var summary: String
            var exitStatus: Int32
            func encode(to encoder: Encoder) throws {
                try report.encode(to: encoder)
                var container = encoder.container(keyedBy: Key.self)
                try container.encode(summary, forKey: .summary)
                try container.encode(exitStatus, forKey: .exitStatus)
            }
            enum Key: String, CodingKey { case summary, exitStatus }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(Document(report: self, summary: summaryLine, exitStatus: exitStatus))) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
