/// How the playlists list the slots of a rendition's outage (its encoder delivered nothing for them).
public enum OutageMode: String, Sendable, Hashable, CaseIterable {
    /// EXT-X-GAP entries (their URLs answer per `GapResponse`): players that honour the tag freeze until the
    /// encoder returns; the others play the filler.
    case gap
    /// Regular segments whose bytes are the filler (the last keyframe and silence, or the test source's slate), with
    /// EXT-X-DISCONTINUITY where the slate starts and where the encoder's media returns, so every player keeps
    /// showing a picture and playing sound. Slots whose media cannot be filled stay EXT-X-GAP.
    case slate
}
