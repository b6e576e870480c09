import MediaProbe

/// Runs a cutter over a body fed whole and fed in pieces, and checks what every cutter promises: the same cuts (or
/// the same refusal) in any split, the first cut at offset 0, offsets increasing, none past the bytes fed, and the
/// settled offset never past them either.
public func checkCutter<Cutter: SegmentCutter>(
    _ make: () -> Cutter, body: UnsafeRawBufferPointer, pieces seed: UInt8
) {
    var whole = make()
    let wholeCuts: [CutPoint]?
    do {
        wholeCuts = try whole.consume(body)
    } catch {
        wholeCuts = nil
    }
    if let wholeCuts { checkCuts(wholeCuts, fed: body.count, settled: whole.settledOffset) }

    var split = make()
    var splitCuts: [CutPoint] = []
    var pieces = Pieces(seed: seed)
    var fed = 0
    var refused = false
    while fed < body.count {
        let end = min(body.count, fed + pieces.next(maximum: 400))
        do {
            splitCuts += try split.consume(UnsafeRawBufferPointer(rebasing: body[fed..<end]))
        } catch {
            refused = true
            break
        }
        fed = end
        guard split.settledOffset <= fed else {
            fatalError("settledOffset \(split.settledOffset) is past the \(fed) bytes fed")
        }
    }
    guard refused == (wholeCuts == nil) else {
        fatalError("fed whole the body was \(wholeCuts == nil ? "refused" : "cut"), fed in pieces it was not")
    }
    if let wholeCuts, wholeCuts != splitCuts {
        fatalError("cuts differ by split: whole \(wholeCuts.prefix(8)), pieces \(splitCuts.prefix(8))")
    }
}

private func checkCuts(_ cuts: [CutPoint], fed: Int, settled: Int) {
    guard settled <= fed else { fatalError("settledOffset \(settled) is past the \(fed) bytes fed") }
    if let first = cuts.first, first.offset != 0 { fatalError("first cut at \(first.offset), not 0") }
    for (a, b) in zip(cuts, cuts.dropFirst()) where b.offset <= a.offset {
        fatalError("cut offsets do not increase: \(a.offset) then \(b.offset)")
    }
    if let last = cuts.last, last.offset > fed { fatalError("cut at \(last.offset) past the \(fed) bytes fed") }
}
