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
}
