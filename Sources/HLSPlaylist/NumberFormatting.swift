/// Number rendering shared by the playlist renderers. Pure integer arithmetic, no locale, no exponent.
///
/// Rules (documented in docs/hls-playlist.md):
/// - every decimal is first rounded to whole milliseconds (half away from zero);
/// - `fixed3` always prints three fractional digits (`2.000`, `29.970`);
/// - `shortest` drops trailing zeros and the point (`30`, `30.5`, `2.002`);
/// - NaN renders as `0`; values beyond ±9.2e15 are clamped (they can never be valid durations).
public enum NumberFormatting {
    /// Largest magnitude (in milliseconds) rendered exactly; beyond it the value is clamped.
    private static let maximumMilliseconds: Double = 9_000_000_000_000_000_000

    /// `value` rounded to whole milliseconds, clamped into `Int64`.
    public static func milliseconds(_ value: Double) -> Int64 {
        guard !value.isNaN else { return 0 }
        let scaled = (value * 1000).rounded(.toNearestOrAwayFromZero)
        if scaled >= maximumMilliseconds { return Int64(maximumMilliseconds) }
        if scaled <= -maximumMilliseconds { return -Int64(maximumMilliseconds) }
        return Int64(scaled)
    }

    /// Exactly three fractional digits: `2.000`, `29.970`, `-0.500`.
    static func fixed3(_ value: Double) -> String {
        let ms = milliseconds(value)
        let magnitude = ms.magnitude
        var text = ms < 0 ? "-" : ""
        text += String(magnitude / 1000)
        text += "."
        text += padded(magnitude % 1000, width: 3)
        return text
    }

    /// Shortest text that keeps millisecond precision: `30`, `30.5`, `2.002`, `0.25`.
    static func shortest(_ value: Double) -> String {
        let ms = milliseconds(value)
        let magnitude = ms.magnitude
        var text = ms < 0 ? "-" : ""
        text += String(magnitude / 1000)
        var fraction = magnitude % 1000
        guard fraction != 0 else { return text }
        var digits = 3
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        text += "."
        text += padded(fraction, width: digits)
        return text
    }

    /// `value` in decimal, left-padded with zeros to `width` digits.
    static func padded<T: BinaryInteger>(_ value: T, width: Int) -> String {
        let digits = String(value)
        guard digits.count < width else { return digits }
        return String(repeating: "0", count: width - digits.count) + digits
    }

    /// `0x` followed by upper-case hex digits, two per byte.
    static func hexadecimal(_ bytes: [UInt8]) -> String {
        let alphabet: [Character] = Array("0123456789ABCDEF")
        var text = "0x"
        text.reserveCapacity(2 + bytes.count * 2)
        for byte in bytes {
            text.append(alphabet[Int(byte >> 4)])
            text.append(alphabet[Int(byte & 0x0F)])
        }
        return text
    }
}
