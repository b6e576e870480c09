// Temporary: main's work in progress uses this; remove once main has it.
extension SegmentRecord {
    public var endMilliseconds: Int64 { programDateTimeMilliseconds + durationMilliseconds }
}
