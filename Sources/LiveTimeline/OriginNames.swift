/// Names of channels and renditions: safe in URLs and file names.
///
/// The one rule for channel and rendition names, checked alike for configured channels and for pushes.
public enum OriginNames {
    /// The rule as error messages state it.
    public static let rule = "1-64 characters of A-Z a-z 0-9 _ -"

    /// True for 1-64 characters of `A-Z a-z 0-9 _ -`.
    public static func isValid(_ name: String) -> Bool {
        guard (1...64).contains(name.utf8.count) else { return false }
        return name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x5F || byte == 0x2D
        }
    }

    /// Suffix of the subtitle rendition the origin derives from a media rendition's WebVTT pushes.
    public static let subtitleSuffix = "-vtt"

    /// The rendition a push really belongs to: ffmpeg pushes a variant's WebVTT segments and playlist under the
    /// video rendition's path (`lo/index3.vtt`, `lo/index_vtt.m3u8`); they go to the subtitle rendition `lo-vtt`.
    /// Every other file stays with `rendition`.
    public static func rendition(_ rendition: String, forFile fileName: String) -> String {
        guard !rendition.hasSuffix(subtitleSuffix),
            fileName.hasSuffix(".vtt") || fileName.hasSuffix("_vtt.m3u8")
        else { return rendition }
        return rendition + subtitleSuffix
    }
}
