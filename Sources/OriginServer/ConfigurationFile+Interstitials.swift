import LiveTimeline
import Markers

extension ConfigurationFile {
    /// `interstitials:` of a channel: breaks also rendered as HLS Interstitials (docs/markers.md, "HLS
    /// Interstitials"), and the bound on the interstitials DVR and recording playlists list.
    struct InterstitialsModel: StrictKeys {
        var assetList: String?
        var assetUri: String?
        var resumeOffset: Double?
        var playoutLimit: Double?
        var snap: [String]?
        var restrict: [String]?
        var cue: [String]?
        var contentMayVary: Bool?
        var timelineOccupies: String?
        var timelineStyle: String?
        var maxListed: Int?
        var listedMinutes: Double?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case assetList, assetUri, resumeOffset, playoutLimit, snap, restrict, cue, contentMayVary
            case timelineOccupies, timelineStyle, maxListed, listedMinutes
        }

        /// The settings, checked: one asset template with known placeholders, and attribute values 8216bis allows.
        func settings(label: String) throws -> InterstitialSettings {
            var settings = InterstitialSettings()
            switch (assetList, assetUri) {
            case (let list?, nil): settings.asset = .list(list)
            case (nil, let uri?): settings.asset = .uri(uri)
            case (.some, .some):
                throw ConfigurationError("\(label): interstitials takes assetList or assetUri, not both")
            case (nil, nil): break
            }
            settings.resumeOffset = resumeOffset
            settings.playoutLimit = playoutLimit
            settings.snap = snap ?? []
            settings.restrict = restrict ?? []
            settings.cue = cue ?? []
            settings.contentMayVary = contentMayVary
            settings.timelineOccupies = timelineOccupies
            settings.timelineStyle = timelineStyle
            if let maxListed { settings.maxListed = maxListed }
            if let listedMinutes {
                guard listedMinutes.isFinite, listedMinutes >= 0, listedMinutes <= 366 * 24 * 60 else {
                    throw ConfigurationError("\(label): interstitials.listedMinutes must be 0 to 527040 minutes")
                }
                settings.listedMilliseconds = Int64((listedMinutes * 60_000).rounded())
            }
            if let problem = settings.problem() { throw ConfigurationError("\(label): interstitials: \(problem)") }
            return settings
        }
    }
}
