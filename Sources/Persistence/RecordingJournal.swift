import Foundation
import Glibc
public import Markers

/// A recording (live-to-VOD) as kept on disk: `{dataDirectory}/recordings/{id}.json`, written through
/// `DurableFile` before any answer, so after a crash the file holds the old or the new manifest.
public struct RecordingManifest: Sendable, Hashable, Codable {
    /// Client-chosen ID (`OriginNames` rule), unique origin-wide.
    public var id: String
    /// The channel recorded.
    public var channel: String
    /// `start` as posted (ISO 8601 or epoch seconds): a repeated POST is compared by what was posted.
    public var requestedStart: String
    /// `end` as posted.
    public var requestedEnd: String
    /// Start of the interval on the PDT timeline, ms since the epoch.
    public var startMilliseconds: Int64
    /// End of the interval (exclusive), ms since the epoch.
    public var endMilliseconds: Int64
    /// When the recording was created (shared clock, ms).
    public var createdMilliseconds: Int64
    /// What the recording holds, taken once the slot containing the end closed; nil until then.
    public var contents: RecordingContents?

    public init(
        id: String, channel: String, requestedStart: String, requestedEnd: String, startMilliseconds: Int64,
        endMilliseconds: Int64, createdMilliseconds: Int64, contents: RecordingContents? = nil
    ) {
        self.id = id
        self.channel = channel
        self.requestedStart = requestedStart
        self.requestedEnd = requestedEnd
        self.startMilliseconds = startMilliseconds
        self.endMilliseconds = endMilliseconds
        self.createdMilliseconds = createdMilliseconds
        self.contents = contents
    }
}

/// What a finished recording lists: its MSN range of the channel's store, a summary per rendition, the channel's
/// multivariant playlist and the markers overlapping the interval, copied so that later marker changes or pruning
/// do not change the recording.
public struct RecordingContents: Sendable, Hashable, Codable {
    /// When the contents were taken (shared clock, ms).
    public var finishedMilliseconds: Int64
    /// The slots overlapping [start, end): first and last MSN; nil when the store held none.
    public var firstMSN: UInt64?
    public var lastMSN: UInt64?
    /// EXT-X-START TIME-OFFSET: start minus the PDT of the first slot, ms.
    public var startOffsetMilliseconds: Int64
    /// Per rendition, in multivariant order.
    public var renditions: [RecordingRenditionSummary]
    /// The channel's multivariant playlist when the recording finished (variant URIs are `{rendition}/index.m3u8`).
    public var multivariantPlaylist: String?
    /// The markers (EXT-X-DATERANGE) overlapping [start, end), as they were when the recording finished.
    public var markers: [Marker]

    public init(
        finishedMilliseconds: Int64, firstMSN: UInt64?, lastMSN: UInt64?, startOffsetMilliseconds: Int64,
        renditions: [RecordingRenditionSummary], multivariantPlaylist: String?, markers: [Marker]
    ) {
        self.finishedMilliseconds = finishedMilliseconds
        self.firstMSN = firstMSN
        self.lastMSN = lastMSN
        self.startOffsetMilliseconds = startOffsetMilliseconds
        self.renditions = renditions
        self.multivariantPlaylist = multivariantPlaylist
        self.markers = markers
    }
}

/// One rendition of a finished recording.
public struct RecordingRenditionSummary: Sendable, Hashable, Codable {
    public var name: String
    /// `MediaContainer` raw value of its segments (`mpegts`, `fmp4`, `adts`, `webvtt`).
    public var container: String
    /// EXT-X-TARGETDURATION of the live playlist.
    public var targetDuration: Int
    /// The live playlist had EXT-X-INDEPENDENT-SEGMENTS.
    public var independentSegments: Bool
    /// Entries with media, and EXT-X-GAP entries.
    public var segments: Int
    public var gaps: Int
    /// Bytes of its segments (shared with the channel's store, not copied).
    public var bytes: Int64
    /// Duration of the listed entries, ms.
    public var durationMilliseconds: Int64
    /// fMP4 initialization section versions the entries need.
    public var initSectionVersions: [Int]

    public init(
        name: String, container: String, targetDuration: Int, independentSegments: Bool, segments: Int, gaps: Int,
        bytes: Int64, durationMilliseconds: Int64, initSectionVersions: [Int]
    ) {
        self.name = name
        self.container = container
        self.targetDuration = targetDuration
        self.independentSegments = independentSegments
        self.segments = segments
        self.gaps = gaps
        self.bytes = bytes
        self.durationMilliseconds = durationMilliseconds
        self.initSectionVersions = initSectionVersions
    }
}

/// The recording manifests under `{dataDirectory}/recordings/`: one file per recording, replaced durably on every
/// change and unlinked (then the directory fsync'd) on delete.
public struct RecordingJournal: Sendable {
    /// `{dataDirectory}/recordings`.
    public let directory: String

    private struct FileContents: Codable {
        var format: String
        var version: Int
        var recording: RecordingManifest
    }

    static let format = "hlsorigin-recording"

    public init(dataDirectory: String) {
        directory = dataDirectory + "/recordings"
    }

    /// The manifest file of a recording.
    public func path(id: String) -> String { directory + "/" + id + ".json" }

    /// Every manifest in the directory (by ID), and the files that could not be read (path and reason).
    public func loadAll() -> (manifests: [RecordingManifest], unreadable: [(path: String, reason: String)]) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var manifests: [RecordingManifest] = []
        var unreadable: [(path: String, reason: String)] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let path = directory + "/" + name
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                let contents = try JSONDecoder().decode(FileContents.self, from: data)
                guard contents.format == Self.format, contents.version == 1 else {
                    unreadable.append((path, "not a version 1 recording manifest"))
                    continue
                }
                guard name == contents.recording.id + ".json" else {
                    unreadable.append((path, "holds recording '\(contents.recording.id)'"))
                    continue
                }
                manifests.append(contents.recording)
            } catch {
                unreadable.append((path, "\(error)"))
            }
        }
        return (manifests, unreadable)
    }

    /// Writes a manifest durably; returns only once it is on disk.
    public func save(_ manifest: RecordingManifest) throws(DurableWriteError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data: Data
        do {
            data = try encoder.encode(FileContents(format: Self.format, version: 1, recording: manifest))
        } catch {
            throw DurableWriteError("encode recording '\(manifest.id)': \(error)")
        }
        try DurableFile.replace(path(id: manifest.id), with: data)
    }

    /// Removes a manifest durably (unlink, then fsync of the directory). A missing file is not an error.
    public func remove(id: String) throws(DurableWriteError) {
        let file = path(id: id)
        if unlink(file) != 0, errno != ENOENT { throw .failed("unlink \(file)") }
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return }
            throw .failed("open \(directory)")
        }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .failed("fsync \(directory)") }
    }

    /// True when a write failed because the disk (or quota) is full: answered 507 rather than 500.
    public static func isOutOfSpace(_ error: DurableWriteError) -> Bool {
        [ENOSPC, EDQUOT].contains { error.message.hasSuffix(String(cString: strerror($0))) }
    }
}
