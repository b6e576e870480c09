package import Markers

/// What a publish tells every output beside the timeline value.
package struct TimelineOutputContext: Sendable {
    /// The channel's name.
    package let channel: String
    /// The time of the change.
    package let nowMilliseconds: Int64
    /// The channel's date ranges as they are now (outputs overlay them).
    package let markers: MarkerBook

    package init(channel: String, nowMilliseconds: Int64, markers: MarkerBook) {
        self.channel = channel
        self.nowMilliseconds = nowMilliseconds
        self.markers = markers
    }
}

/// An output of a channel's timeline (HLS today; DASH or a steering manifest next). Every publish hands each output
/// the timeline's new value, read-only (`ChannelState`'s fields are `package internal(set)`), under the channel's
/// state lock, so an output sees the changes in order. An output keeps what it renders; its readers reach that through
/// the output's own typed API, never through this protocol (the list is walked only at publish).
package protocol TimelineOutput: AnyObject, Sendable {
    /// Renders `timeline`'s new value and keeps the result.
    func publish(_ timeline: ChannelState, context: TimelineOutputContext)
}
