import CivilCalendar

extension ProgramDateTime {
    private static let millisecondsPerDay: Int64 = 86_400_000

    /// The date as `YYYY-MM-DDThh:mm:ss.sssZ`: always UTC, always three fractional digits.
    ///
    /// Computed with civil-from-days arithmetic (proleptic Gregorian calendar), no `DateFormatter`.
    /// Dates before 1970 work (`-1` ms is `1969-12-31T23:59:59.999Z`). Years outside 0000–9999 cannot be written
    /// in the RFC's format; they come out with a sign (`+10000-...`, `-0001-...`) and ``init(iso8601:)`` refuses
    /// them, as does ``DateRange/validate()``.
    public var formatted: String {
        let ms = millisecondsSince1970
        let days = CivilCalendar.floorDivide(ms, Self.millisecondsPerDay)
        let remainder = ms % Self.millisecondsPerDay
        let msOfDay = remainder < 0 ? remainder + Self.millisecondsPerDay : remainder
        let (year, month, day) = CivilCalendar.date(fromDays: days)
        let hour = msOfDay / 3_600_000
        let minute = msOfDay / 60_000 % 60
        let second = msOfDay / 1000 % 60
        let millisecond = msOfDay % 1000

        if (0...9999).contains(year) {
            // The common case, written straight into the string's storage: `YYYY-MM-DDThh:mm:ss.sssZ`.
            return String(unsafeUninitializedCapacity: 24) { buffer in
                var position = 0
                func put(_ value: Int64, width: Int, then separator: UInt8) {
                    var rest = value
                    for offset in stride(from: width - 1, through: 0, by: -1) {
                        buffer[position + offset] = UInt8(ascii: "0") + UInt8(rest % 10)
                        rest /= 10
                    }
                    buffer[position + width] = separator
                    position += width + 1
                }
                put(year, width: 4, then: UInt8(ascii: "-"))
                put(month, width: 2, then: UInt8(ascii: "-"))
                put(day, width: 2, then: UInt8(ascii: "T"))
                put(hour, width: 2, then: UInt8(ascii: ":"))
                put(minute, width: 2, then: UInt8(ascii: ":"))
                put(second, width: 2, then: UInt8(ascii: "."))
                put(millisecond, width: 3, then: UInt8(ascii: "Z"))
                return position
            }
        }
        var text = ""
        text.reserveCapacity(24)
        if year < 0 {
            text += "-" + NumberFormatting.padded(-year, width: 4)
        } else if year > 9999 {
            text += "+" + String(year)
        } else {
            text += NumberFormatting.padded(year, width: 4)
        }
        text += "-" + NumberFormatting.padded(month, width: 2)
        text += "-" + NumberFormatting.padded(day, width: 2)
        text += "T" + NumberFormatting.padded(hour, width: 2)
        text += ":" + NumberFormatting.padded(minute, width: 2)
        text += ":" + NumberFormatting.padded(second, width: 2)
        text += "." + NumberFormatting.padded(millisecond, width: 3)
        text += "Z"
        return text
    }

    /// Whether ``formatted`` is a valid RFC 8216 date (year 0000–9999).
    var isRepresentable: Bool {
        let year = CivilCalendar.date(
            fromDays: CivilCalendar.floorDivide(millisecondsSince1970, Self.millisecondsPerDay)
        ).year
        return (0...9999).contains(year)
    }

    /// Parses an ISO 8601 / RFC 3339 date-time: `YYYY-MM-DDThh:mm:ss[.f]` followed by `Z`, `±hh:mm` or `±hhmm`.
    ///
    /// - `T` (or `t`) is required between date and time; `Z` may be `z`.
    /// - 0 to 9 fractional digits, rounded half up to milliseconds (which may carry into the next second).
    /// - Returns nil for anything else: a missing zone, month 13, February 30 in a common year, hour 24,
    ///   second 60 (leap seconds are refused), offsets beyond ±23:59, trailing text.
    /// - Parameter text: the date-time text.
    public init?(iso8601 text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count <= 64 else { return nil }
        var reader = DigitReader(bytes: bytes)
        guard let year = reader.number(digits: 4), reader.expect(UInt8(ascii: "-")),
            let month = reader.number(digits: 2), reader.expect(UInt8(ascii: "-")),
            let day = reader.number(digits: 2),
            reader.expect(UInt8(ascii: "T")) || reader.expect(UInt8(ascii: "t")),
            let hour = reader.number(digits: 2), reader.expect(UInt8(ascii: ":")),
            let minute = reader.number(digits: 2), reader.expect(UInt8(ascii: ":")),
            let second = reader.number(digits: 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= CivilCalendar.daysIn(month: month, year: year),
            hour <= 23, minute <= 59, second <= 59
        else { return nil }

        var fractionMilliseconds: Int64 = 0
        if reader.expect(UInt8(ascii: ".")) {
            var digitCount = 0
            var nanoseconds: Int64 = 0
            while let digit = reader.digit() {
                digitCount += 1
                guard digitCount <= 9 else { return nil }
                nanoseconds = nanoseconds * 10 + digit
            }
            guard digitCount > 0 else { return nil }
            for _ in digitCount..<9 { nanoseconds *= 10 }
            fractionMilliseconds = (nanoseconds + 500_000) / 1_000_000
        }

        var offsetMinutes: Int64 = 0
        if reader.expect(UInt8(ascii: "Z")) || reader.expect(UInt8(ascii: "z")) {
            offsetMinutes = 0
        } else {
            let sign: Int64
            if reader.expect(UInt8(ascii: "+")) {
                sign = 1
            } else if reader.expect(UInt8(ascii: "-")) {
                sign = -1
            } else {
                return nil
            }
            guard let offsetHours = reader.number(digits: 2) else { return nil }
            _ = reader.expect(UInt8(ascii: ":"))
            guard let offsetMinutePart = reader.number(digits: 2), offsetHours <= 23, offsetMinutePart <= 59 else {
                return nil
            }
            offsetMinutes = sign * (offsetHours * 60 + offsetMinutePart)
        }
        guard reader.atEnd else { return nil }

        let days = CivilCalendar.days(year: year, month: month, day: day)
        let secondsOfDay = hour * 3600 + minute * 60 + second
        let local = days * Self.millisecondsPerDay + secondsOfDay * 1000 + fractionMilliseconds
        self.init(millisecondsSince1970: local - offsetMinutes * 60_000)
    }

}

/// A cursor over ASCII bytes reading fixed-width decimal numbers.
private struct DigitReader {
    let bytes: [UInt8]
    var index = 0

    var atEnd: Bool { index == bytes.count }

    mutating func expect(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    mutating func digit() -> Int64? {
        guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") else {
            return nil
        }
        defer { index += 1 }
        return Int64(bytes[index] - UInt8(ascii: "0"))
    }

    mutating func number(digits: Int) -> Int64? {
        var value: Int64 = 0
        for _ in 0..<digits {
            guard let next = digit() else { return nil }
            value = value * 10 + next
        }
        return value
    }
}
