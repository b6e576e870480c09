import LiveTimeline
package import Markers

extension ChannelConfiguration {
    /// What the live and Low-Latency playlists list of interstitials: every one in the window (the window is the
    /// bound), breaks rendered with the channel's asset, in-band cues too with `inbandCues: interstitials`.
    package var liveInterstitials: InterstitialListing {
        InterstitialListing(settings: interstitials, includesInband: inbandCues == .interstitials)
    }

    /// What a DVR or recording playlist ending at `edgeMilliseconds` lists of interstitials: at most
    /// `interstitials.maxListed`, from the last `interstitials.listedMilliseconds` before the edge
    /// (``MarkerBook/interstitialListing(settings:includesInband:edgeMilliseconds:)``).
    package func boundedInterstitials(_ book: MarkerBook, edgeMilliseconds: Int64) -> InterstitialListing {
        book.interstitialListing(
            settings: interstitials, includesInband: inbandCues == .interstitials, edgeMilliseconds: edgeMilliseconds)
    }
}
