import OriginServer

/// The YAML configuration file (`--config`): any text, parsed and validated. Errors are fine, crashes are not.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? ConfigurationFile.parse(text, source: "fuzz.yaml")
    return 0
}
