extension DateRange {
    /// The `#EXT-X-DATERANGE:` line, without a line break.
    ///
    /// Attribute order: ``DateRangeAttribute``'s (ID, CLASS, START-DATE, CUE, END-DATE, DURATION, PLANNED-DURATION,
    /// SCTE35-CMD, SCTE35-OUT, SCTE35-IN, END-ON-NEXT=YES), with the client attributes in their given order just
    /// before SCTE35-CMD. Decimals use the shortest text that keeps millisecond precision (`30`, `30.5`, `2.002`); hex
    /// is `0x` + upper-case digits; CUE values are joined with commas in one quoted string. Nothing is checked here:
    /// call ``validate()`` first for values from outside.
    public var renderedTag: String {
        var text = "#EXT-X-DATERANGE:"
        var first = true
        func append(_ name: String, _ value: AttributeValue) {
            if !first { text += "," }
            first = false
            text += name + "=" + AttributeList.render(value)
        }
        for attribute in DateRangeAttribute.allCases {
            if attribute == .scte35Command {
                for clientAttribute in clientAttributes { append(clientAttribute.name, clientAttribute.value) }
            }
            if let value = self[attribute] { append(attribute.name, value) }
        }
        return text
    }
}
