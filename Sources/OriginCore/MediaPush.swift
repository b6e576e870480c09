public import LiveTimeline
public import SharedBytes

/// One push as the core takes it from any input (HTTP push, peer repair, a future SRT input): which channel and
/// rendition, what it is, its bytes, and who sent it. Inputs turn their own conventions (ffmpeg's file names, a
/// peer's playlist) into this value; the core never sees a file name (`Origin.ingest(_:)`).
public struct MediaPush: Sendable {
    /// What an input says the push is.
    public enum Kind: Sendable, Hashable {
        /// Media: an fMP4 initialization section or a segment (told apart, and the container detected, from the
        /// bytes).
        case media
        /// The encoder's media playlist for the rendition: a hint, parsed and not trusted.
        case playlistHint
        /// Something the input recognizes and the origin does not use (ffmpeg's DASH manifest): answered with
        /// `message` after the name and size checks, nothing changes.
        case ignored(message: String)
    }

    /// The channel's name (checked by the core).
    public var channel: String
    /// The rendition's name (checked by the core), already mapped by the input (`lo-vtt` for ffmpeg's `lo/*.vtt`).
    public var rendition: String
    public var kind: Kind
    public var body: SharedBytes
    /// The number the input read from the push's naming (ffmpeg's `index7.ts` and `index7.vtt`: 7): a WebVTT
    /// segment without a timestamp map goes to the slot of its parent's segment with the same number.
    public var sequenceNumber: Int?
    /// How messages name the push (the file name of an HTTP push).
    public var label: String
    /// A segment repaired from a peer of the redundancy group: the slot it fills.
    public var placement: PeerPlacement?
    /// Who pushes, named in the audit log when the push creates a channel or rendition.
    public var requester: Requester

    public init(
        channel: String, rendition: String, kind: Kind, body: SharedBytes, sequenceNumber: Int? = nil,
        label: String, placement: PeerPlacement? = nil, requester: Requester = .process
    ) {
        self.channel = channel
        self.rendition = rendition
        self.kind = kind
        self.body = body
        self.sequenceNumber = sequenceNumber
        self.label = label
        self.placement = placement
        self.requester = requester
    }
}
