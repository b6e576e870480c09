import HLSPlaylist
import MediaProbe

/// End-of-watch checks: stalls still in progress (rule 15) and each variant's BANDWIDTH, CODECS and RESOLUTION
/// against the media measured (rule 34).
extension StreamChecker {
    /// Codec families the probe recognises: a CODECS entry of another family (`wvtt`, `stpp.ttml.im1t`) is not
    /// compared.
    static let probedCodecFamilies: Set<String> = [
        "avc1", "avc3", "hvc1", "hev1", "mp4a", "ac-3", "ec-3", "opus", "flac", "mp4v", "av01", "vp09", "dvh1", "dvhe",
    ]

    /// Reports stalls still in progress and notes each rendition's longest wait for a segment.
    mutating func finishRenditions() {
        for url in renditionOrder {
            guard var history = renditions[url] else { continue }
            flushStaleness(history: &history)
            if history.reloads > 1, let target = history.targetDuration {
                note(
                    .freshness,
                    "\(history.name): longest wait for a new segment >= \(Self.seconds(history.longestStaleness)) "
                        + "(limit \(Self.seconds(Int64(target) * 1500)))")
            }
            renditions[url] = history
        }
    }

    /// Rule 34 for each variant whose media was measured.
    mutating func finishVariants() {
        guard let multivariant, let base = multivariantURL else { return }
        for variant in multivariant.variants {
            guard let video = renditions[Self.resolve(variant.uri, against: base)], !video.media.isEmpty else {
                continue
            }
            let audio = multivariant.renditions.filter {
                $0.type == .audio && variant.audioGroup != nil && $0.groupID == variant.audioGroup
            }.compactMap { $0.uri.flatMap { renditions[Self.resolve($0, against: base)] } }
            checkBandwidth(variant, video: video, audio: audio)
            checkCodecs(variant, video: video, audio: audio)
        }
    }

    /// The measured peak: the largest bit rate of any run of consecutive measured segments lasting 0.5 to 1.5 TD
    /// (RFC 8216 section 4.3.4.2), the audio group's largest segment at the same MSN added.
    private mutating func checkBandwidth(
        _ variant: VariantStream, video: RenditionHistory, audio: [RenditionHistory]
    ) {
        let target = Int64(video.targetDuration ?? 1) * 1000
        var bits: [UInt64: (bits: Int64, duration: Int64)] = [:]
        for (msn, media) in video.media {
            guard let entry = video.entries[msn], entry.durationMilliseconds > 0 else { continue }
            let audioBytes = audio.compactMap { $0.media[msn]?.byteCount }.max()
            if !audio.isEmpty, audioBytes == nil { continue }
            bits[msn] = (Int64(media.byteCount + (audioBytes ?? 0)) * 8, entry.durationMilliseconds)
        }
        var peak: (rate: Int64, from: UInt64, to: UInt64)?
        var totalBits: Int64 = 0
        var totalDuration: Int64 = 0
        for start in bits.keys.sorted() {
            totalBits += bits[start]!.bits
            totalDuration += bits[start]!.duration
            var runBits: Int64 = 0
            var runDuration: Int64 = 0
            var msn = start
            while let next = bits[msn], runDuration + next.duration <= target * 3 / 2 {
                runBits += next.bits
                runDuration += next.duration
                if runDuration * 2 >= target {
                    let rate = runBits * 1000 / runDuration
                    if rate > (peak?.rate ?? 0) { peak = (rate, start, msn) }
                }
                msn += 1
            }
        }
        guard let peak else { return }
        checked(.bandwidth)
        let average = totalDuration > 0 ? totalBits * 1000 / totalDuration : 0
        let percent = peak.rate * 100 / Int64(max(variant.bandwidth, 1))
        let run = peak.from == peak.to ? "MSN \(peak.from)" : "MSN \(peak.from)-\(peak.to)"
        if Double(peak.rate) > Double(variant.bandwidth) * Self.bandwidthTolerance {
            fail(
                .bandwidth,
                "\(variant.uri): measured peak \(peak.rate) b/s (\(run)) is \(percent) % of BANDWIDTH "
                    + "\(variant.bandwidth), over the 125 % tolerance (A1.28; RFC: BANDWIDTH >= peak)")
        } else {
            note(
                .bandwidth,
                "\(variant.uri): peak \(peak.rate) b/s (\(run)) = \(percent) % of BANDWIDTH \(variant.bandwidth), "
                    + "average \(average) b/s (tolerance 125 %)")
        }
    }

    /// CODECS lists exactly the codecs found in the variant's media and its audio group (families the probe knows);
    /// RESOLUTION is the video's.
    private mutating func checkCodecs(_ variant: VariantStream, video: RenditionHistory, audio: [RenditionHistory]) {
        let tracks = (video.media.values.map(\.info) + audio.flatMap { $0.media.values.map(\.info) }).flatMap(\.tracks)
        let found = Set(tracks.filter { $0.kind == .video || $0.kind == .audio }.compactMap { $0.codec?.lowercased() })
        guard !found.isEmpty else { return }
        checked(.codecs)
        let declared = Set(
            variant.codecs.map { $0.lowercased() }.filter {
                Self.probedCodecFamilies.contains(String($0.prefix { $0 != "." }))
            })
        if variant.codecs.isEmpty {
            fail(
                .codecs,
                "\(variant.uri): no CODECS attribute; the media has \(found.sorted().joined(separator: ","))")
        } else if declared != found {
            fail(
                .codecs,
                "\(variant.uri): CODECS=\"\(variant.codecs.joined(separator: ","))\" but the media has "
                    + "\(found.sorted().joined(separator: ","))")
        }
        if let resolution = variant.resolution,
            let picture = tracks.first(where: { $0.kind == .video && $0.width != nil && $0.height != nil }),
            picture.width != resolution.width || picture.height != resolution.height
        {
            fail(
                .codecs,
                "\(variant.uri): RESOLUTION=\(resolution.width)x\(resolution.height) but the video is "
                    + "\(picture.width!)x\(picture.height!)")
        }
    }
}
