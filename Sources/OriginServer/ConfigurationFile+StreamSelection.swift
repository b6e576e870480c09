import LiveTimeline
import MediaProbe

extension ConfigurationFile {
    /// `srt:` of a rendition: cut from another rendition's SRT stream (docs/srt.md, "Several renditions from one
    /// stream").
    struct StreamSelectionModel: StrictKeys {
        var from: String
        var program: Int?
        var pid: Int?
        var language: String?
        var type: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case from, program, pid, language, type }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            from = try container.decode(String.self, forKey: .from)
            program = try container.decodeIfPresent(Int.self, forKey: .program)
            pid = try container.decodeIfPresent(Int.self, forKey: .pid)
            language = try container.decodeIfPresent(String.self, forKey: .language)
            type = try container.decodeIfPresent(String.self, forKey: .type)
            if let type, type != "video", type != "audio" {
                throw DecodingError.dataCorruptedError(
                    forKey: .type, in: container, debugDescription: "type must be video or audio, not '\(type)'")
            }
        }

        var selection: StreamSelection {
            StreamSelection(
                from: from, program: program, pid: pid, language: language,
                kind: type.flatMap { TrackKind(rawValue: $0) })
        }
    }

    /// What is wrong with the `srt:` selections of `channel`'s renditions, naming the rendition; nil when nothing.
    static func streamSelectionProblem(_ channel: ChannelConfiguration) -> String? {
        for rendition in channel.renditions {
            guard let selection = rendition.srt else { continue }
            let place = "rendition '\(rendition.name)' srt"
            guard channel.renditions.contains(where: { $0.name == selection.from }) else {
                return "\(place): from '\(selection.from)' is not a rendition of the channel"
            }
            if selection.from != rendition.name,
                let source = channel.renditions.first(where: { $0.name == selection.from })?.srt,
                source.from != selection.from
            {
                return "\(place): from '\(selection.from)', which is itself cut from '\(source.from)'"
            }
            if selection.program != nil, selection.pid != nil {
                return "\(place): give program or pid, not both"
            }
            if let program = selection.program, !(1...65535).contains(program) {
                return "\(place): program must be 1-65535 (a PAT program_number), not \(program)"
            }
            if let pid = selection.pid, !(0x20...0x1FFE).contains(pid) {
                return "\(place): pid must be 32-8190, not \(pid)"
            }
            if let language = selection.language,
                language.count != 3 || !language.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) })
            {
                return "\(place): language must be an ISO 639-2 code, 3 lowercase letters (eng, fra), not '\(language)'"
            }
            if selection.language != nil, selection.kind == .video {
                return "\(place): language selects an audio stream (type audio)"
            }
            if selection.pid != nil, selection.language != nil || selection.kind != nil {
                return "\(place): pid selects one stream alone (no language or type with it)"
            }
        }
        return nil
    }
}
