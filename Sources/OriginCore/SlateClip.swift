import Foundation
public import GapFiller
public import LiveTimeline

/// Why a slate clip cannot be used.
public struct SlateClipError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

extension ChannelConfiguration {
    /// The clip of `rendition`: `template` with `{rendition}` replaced by its name.
    public static func slateClipPath(_ template: String, rendition: String) -> String {
        template.replacingOccurrences(of: "{rendition}", with: rendition)
    }

    /// Reads and checks the slate clip at `path`.
    /// - Throws: `SlateClipError` when the file cannot be read or is not a clip the filler can loop.
    public static func loadSlateClip(_ path: String) throws(SlateClipError) -> ClipGapFillerSource {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SlateClipError(description: "cannot read '\(path)'")
        }
        do {
            return try ClipGapFillerSource(clip: [UInt8](data))
        } catch {
            throw SlateClipError(description: "'\(path)': \(error.message)")
        }
    }
}
