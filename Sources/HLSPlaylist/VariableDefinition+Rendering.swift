extension VariableDefinition {
    /// The `#EXT-X-DEFINE:` line, without a line break: `NAME="n",VALUE="v"`, `IMPORT="n"` or `QUERYPARAM="n"`.
    public var renderedTag: String {
        switch self {
        case .value(let name, let value):
            return "#EXT-X-DEFINE:NAME=" + AttributeList.quoted(name) + ",VALUE=" + AttributeList.quoted(value)
        case .import(let name):
            return "#EXT-X-DEFINE:IMPORT=" + AttributeList.quoted(name)
        case .queryParameter(let name):
            return "#EXT-X-DEFINE:QUERYPARAM=" + AttributeList.quoted(name)
        }
    }

    /// The variable's name.
    public var name: String {
        switch self {
        case .value(let name, _), .import(let name), .queryParameter(let name): return name
        }
    }

    /// The lowest EXT-X-VERSION this definition needs: 8 (variable substitution), 11 for QUERYPARAM.
    var minimumVersion: Int {
        switch self {
        case .value, .import: return 8
        case .queryParameter: return 11
        }
    }
}
