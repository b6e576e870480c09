import ContinuousTSInput
import Foundation
import HLSPackaging
import HLSPlaylist
import LiveTimeline
import Markers
import OriginCore
import SRTInput

/// The status page's data: every channel's timeline in one compact JSON document (`GET /status/timeline.json`),
/// built from the published snapshots and the marker books without taking a channel's state lock.
///
/// ```
/// {"now": 1764027000123,
///  "channels": [{"name": "demo", "version": 812, "targetDuration": 2,
///    "renditions": [{"name": "180p", "mediaSequence": 40, "discontinuitySequence": 1, "listed": 6,
///      "edgeLagMs": 850, "driftMs": 40, "entries": [[34, 1764026988000, 2000, 4], [40, ..., 2000, 0], ...]}],
///    "markers": [{"id": "ad-1", "class": "com.example.ad", "start": 1764026996000, "end": null,
///      "planned": 30000, "scte35": ["out"]}]}]}
/// ```
///
/// An entry is `[msn, pdt, duration, flags]` (ms since the epoch, ms); flags: 1 = EXT-X-GAP, 2 =
/// EXT-X-DISCONTINUITY before it, 4 = retained (left the playlist, still downloadable). docs/status-page.md
/// describes every field.
enum StatusTimeline {
    /// Flag bits of an entry.
    static let gapFlag = 1
    static let discontinuityFlag = 2
    static let retainedFlag = 4

    /// One channel as the timeline shows it: its published snapshot and its markers.
    struct ChannelView {
        let snapshot: ChannelSnapshot
        let markers: [Marker]
        /// The channel's SRT callers (`ingest.srt`), shown with their statistics.
        var srtCallers: [SRTCallerStatus] = []
        /// The segmenter's session of each SRT caller, by rendition: segments accepted and refused, the keyframe
        /// warning, the demuxer's counters.
        var srtStreams: [String: ContinuousTSSession.Status] = [:]
    }

    /// The document for `channels` at `now` (shared-clock ms since the epoch).
    static func json(nowMilliseconds now: Int64, channels: [ChannelView]) -> String {
        var out = "{\"now\":\(now),\"channels\":["
        out.reserveCapacity(256 + channels.count * 2048)
        for (index, channel) in channels.enumerated() {
            if index > 0 { out += "," }
            append(channel, now: now, to: &out)
        }
        out += "]}\n"
        return out
    }

    private static func append(_ channel: ChannelView, now: Int64, to out: inout String) {
        let snapshot = channel.snapshot
        let renditions = snapshot.renditions.values.sorted { $0.name < $1.name }
        let targetDuration = renditions.map(\.targetDuration).max() ?? 0
        out += "{\"name\":"
        appendString(snapshot.name, to: &out)
        out += ",\"version\":\(snapshot.version),\"targetDuration\":\(targetDuration),\"renditions\":["
        for (index, rendition) in renditions.enumerated() {
            if index > 0 { out += "," }
            append(rendition, now: now, to: &out)
        }
        out += "],\"markers\":["
        for (index, marker) in channel.markers.enumerated() {
            if index > 0 { out += "," }
            append(marker, to: &out)
        }
        out += "]"
        if !channel.srtCallers.isEmpty, let data = try? JSONEncoder().encode(channel.srtCallers) {
            out += ",\"srtCallers\":" + String(decoding: data, as: UTF8.self)
        }
        if !channel.srtStreams.isEmpty, let data = try? JSONEncoder().encode(channel.srtStreams) {
            out += ",\"srtStreams\":" + String(decoding: data, as: UTF8.self)
        }
        out += "}"
    }

    private static func append(_ rendition: RenditionSnapshot, now: Int64, to out: inout String) {
        let listed = rendition.listedEntries
        out += "{\"name\":"
        appendString(rendition.name, to: &out)
        out += ",\"mediaSequence\":" + (listed.first.map { "\($0.msn)" } ?? "null")
        out += ",\"discontinuitySequence\":\(rendition.discontinuitySequence)"
        out += ",\"listed\":\(listed.count)"
        out += ",\"edgeLagMs\":" + (rendition.entries.last.map { "\(now - $0.endMilliseconds)" } ?? "null")
        out += ",\"driftMs\":\(rendition.driftMilliseconds),\"entries\":["
        for (index, entry) in rendition.entries.enumerated() {
            if index > 0 { out += "," }
            var flags = entry.isGap ? gapFlag : 0
            if entry.discontinuity { flags |= discontinuityFlag }
            if index < rendition.firstListedIndex { flags |= retainedFlag }
            out += "[\(entry.msn),\(entry.programDateTimeMilliseconds),\(entry.durationMilliseconds),\(flags)]"
        }
        out += "]}"
    }

    private static func append(_ marker: Marker, to out: inout String) {
        out += "{\"id\":"
        appendString(marker.id, to: &out)
        out += ",\"class\":"
        if let classAttribute = marker.classAttribute { appendString(classAttribute, to: &out) } else { out += "null" }
        out += ",\"start\":\(marker.startDate.millisecondsSince1970)"
        out += ",\"end\":" + (marker.knownEndMilliseconds.map { "\($0)" } ?? "null")
        out += ",\"planned\":" + (marker.plannedDuration.map { "\(NumberFormatting.milliseconds($0))" } ?? "null")
        out += ",\"scte35\":["
        let kinds = scte35Kinds(marker)
        out += kinds.map { "\"\($0)\"" }.joined(separator: ",")
        out += "]}"
    }

    /// The SCTE-35 attributes the marker's EXT-X-DATERANGE carries: `out` (SCTE35-OUT, the splice out),
    /// `in` (SCTE35-IN, the splice back in), `cmd` (SCTE35-CMD).
    static func scte35Kinds(_ marker: Marker) -> [String] {
        var kinds: [String] = []
        if marker.scte35Out != nil { kinds.append("out") }
        if marker.scte35In != nil { kinds.append("in") }
        if marker.scte35Command != nil { kinds.append("cmd") }
        return kinds
    }

    /// A JSON string literal.
    static func appendString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "<": out += "\\u003c"  // never a tag when the JSON ends up in a page
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
