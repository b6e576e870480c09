import CivilCalendar

/// IMF-fixdate (RFC 9110 section 5.6.7), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`, by plain arithmetic.
public enum HTTPDate {
    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Formats seconds since the Unix epoch.
    public static func format(secondsSince1970 seconds: Int64) -> String {
        let dayNumber = CivilCalendar.floorDivide(seconds, 86400)
        let secondOfDay = seconds - dayNumber * 86400
        let (year, month, day) = CivilCalendar.date(fromDays: dayNumber)
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
        let epochDay = CivilCalendar.days(year: year, month: Int64(monthIndex + 1), day: day)
        return epochDay * 86400 + time[0] * 3600 + time[1] * 60 + time[2]
    }
}
