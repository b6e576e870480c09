/// One H.264 access unit of a fixture, in Annex B byte-stream form (start codes included), starting with its AUD.
struct H264AccessUnit: Sendable, Hashable {
    /// The access unit's bytes, written as they are into a PES packet.
    let bytes: [UInt8]
    /// `true` when the access unit holds an IDR picture (NAL unit type 5).
    let isIDR: Bool
    /// The NAL unit types in the access unit, in order.
    let nalUnitTypes: [UInt8]

    /// Splits an Annex B elementary stream into access units, each starting at an access unit delimiter.
    /// - Throws: when the stream does not start with an AUD or holds no NAL unit.
    static func split(annexB data: [UInt8], name: String) throws(TestSourceError) -> [H264AccessUnit] {
        let nalUnits = nalUnitStarts(in: data)
        guard let first = nalUnits.first, data[first.payload] & 0x1F == 9 else {
            throw TestSourceError(
                .fixtureUnavailable, "\(name): the stream does not start with an access unit delimiter")
        }
        var units: [H264AccessUnit] = []
        var unitStart = first.startCode
        var types: [UInt8] = []
        for nal in nalUnits {
            let type = data[nal.payload] & 0x1F
            if type == 9, !types.isEmpty {
                units.append(H264AccessUnit(bytes: Array(data[unitStart..<nal.startCode]), nalUnitTypes: types))
                unitStart = nal.startCode
                types = []
            }
            types.append(type)
        }
        units.append(H264AccessUnit(bytes: Array(data[unitStart...]), nalUnitTypes: types))
        return units
    }

    init(bytes: [UInt8], nalUnitTypes: [UInt8]) {
        self.bytes = bytes
        self.nalUnitTypes = nalUnitTypes
        self.isIDR = nalUnitTypes.contains(5)
    }

    /// The access unit with `nalUnit` (start code included) inserted before its first slice, where H.264 wants SEI.
    func inserting(beforeFirstSlice nalUnit: [UInt8]) -> H264AccessUnit {
        let firstSlice = Self.nalUnitStarts(in: bytes).first { (1...5).contains(bytes[$0.payload] & 0x1F) }
        let position = firstSlice?.startCode ?? bytes.count
        let type = nalUnit.count > 4 ? nalUnit[4] & 0x1F : 0
        var types = nalUnitTypes
        types.insert(type, at: nalUnitTypes.firstIndex { (1...5).contains($0) } ?? types.count)
        return H264AccessUnit(bytes: Array(bytes[..<position]) + nalUnit + bytes[position...], nalUnitTypes: types)
    }

    /// The offsets of every NAL unit: where its start code begins (a 4-byte start code counts its leading zero)
    /// and where its header byte is.
    private static func nalUnitStarts(in data: [UInt8]) -> [(startCode: Int, payload: Int)] {
        var starts: [(startCode: Int, payload: Int)] = []
        var index = 0
        while index + 3 < data.count {
            if data[index] == 0, data[index + 1] == 0, data[index + 2] == 1 {
                let startCode = index > 0 && data[index - 1] == 0 ? index - 1 : index
                starts.append((startCode, index + 3))
                index += 3
            } else {
                index += 1
            }
        }
        return starts
    }
}
