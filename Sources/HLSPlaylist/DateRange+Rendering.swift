extension DateRange {
    /// The `#EXT-X-DATERANGE:` line, without a line break.
    ///
    /// Attribute order: ID, CLASS, START-DATE, CUE, END-DATE, DURATION, PLANNED-DURATION, client attributes in their
    /// given order, SCTE35-CMD, SCTE35-OUT, SCTE35-IN, END-ON-NEXT=YES. Decimals use the shortest text that keeps
    /// millisecond precision (`30`, `30.5`, `2.002`); hex is `0x` + upper-case digits; CUE values are joined with
    /// commas in one quoted string. Nothing is checked here: call ``validate()`` first for values from outside.
    public var renderedTag: String {
        var text = "#EXT-X-DATERANGE:ID=" + AttributeList.quoted(id)
        if let classAttribute {
            text += ",CLASS=" + AttributeList.quoted(classAttribute)
        }
        text += ",START-DATE=" + AttributeList.quoted(startDate.formatted)
        if !cue.isEmpty {
            text += ",CUE=" + AttributeList.quoted(cue.joined(separator: ","))
        }
        if let endDate {
            text += ",END-DATE=" + AttributeList.quoted(endDate.formatted)
        }
        if let duration {
            text += ",DURATION=" + NumberFormatting.shortest(duration)
        }
        if let plannedDuration {
            text += ",PLANNED-DURATION=" + NumberFormatting.shortest(plannedDuration)
        }
        for attribute in clientAttributes {
            text += "," + attribute.name + "=" + AttributeList.render(attribute.value)
        }
        if let scte35Command {
            text += ",SCTE35-CMD=" + NumberFormatting.hexadecimal(scte35Command)
        }
        if let scte35Out {
            text += ",SCTE35-OUT=" + NumberFormatting.hexadecimal(scte35Out)
        }
        if let scte35In {
            text += ",SCTE35-IN=" + NumberFormatting.hexadecimal(scte35In)
        }
        if endOnNext {
            text += ",END-ON-NEXT=YES"
        }
        return text
    }
}
