/// IMF-fixdate (RFC 9110 section 5.6.7), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`, by plain arithmetic.
public enum HTTPDate {
    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Formats seconds since the Unix epoch.
    public static func format(secondsSince1970 seconds: Int64) -> String {
        let dayNumber = Int64((Double(seconds) / 86400).rounded(.down))
        let secondOfDay = seconds - dayNumber * 86400
        let (year, month, day) = civil(fromDays: dayNumber)
        let weekday = weekdays[Int(((dayNumber % 7) + 7) % 7)]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekday), \(two(day)) \(months[Int(month) - 1]) \(year) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    /// Parses an IMF-fixdate; nil for anything else (obsolete formats are treated as absent validators).
    public static func parse(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let day = Int64(parts[1]),
            let monthIndex = months.firstIndex(of: String(parts[2])), let year = Int64(parts[3])
        else { return nil }
        let time = parts[4].split(separator: ":").compactMap { Int64($0) }
        guard time.count == 3, (1...31).contains(day), time[0] < 24, time[1] < 60, time[2] < 61 else { return nil }
        let epochDay = dayNumber(year: year, month: Int64(monthIndex + 1), day: day)
        return epochDay * 86400 + time[0] * 3600 + time[1] * 60 + time[2]
    }

    /// The proleptic Gregorian date of a day number (days since 1970-01-01), after Howard Hinnant's algorithm.
    static func civil(fromDays dayCount: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = dayCount + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    /// The day number (days since 1970-01-01) of a proleptic Gregorian date.
    static func dayNumber(year: Int64, month: Int64, day: Int64) -> Int64 {
        let adjustedYear = month <= 2 ? year - 1 : year
        let era = (adjustedYear >= 0 ? adjustedYear : adjustedYear - 399) / 400
        let yearOfEra = adjustedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
