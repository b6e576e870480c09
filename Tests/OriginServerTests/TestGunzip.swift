import CZlib

/// Test-side gzip decoder (zlib's inflate with the gzip wrapper), independent of the server's encoder.
enum TestGunzip {
    /// The decompressed bytes, or nil if `data` is not one complete gzip member.
    static func decompress(_ data: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        // windowBits 15 + 16: accept only the gzip wrapper.
        guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return nil
        }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var input = data
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var status: Int32 = Z_OK
        input.withUnsafeMutableBufferPointer { inputBuffer in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = uInt(inputBuffer.count)
            repeat {
                let produced = chunk.withUnsafeMutableBufferPointer { out -> Int in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return out.count - Int(stream.avail_out)
                }
                output += chunk[..<produced]
            } while status == Z_OK
        }
        guard status == Z_STREAM_END, stream.avail_in == 0 else { return nil }
        return output
    }
}
