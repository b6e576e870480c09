import Glibc

/// `SOCK_STREAM` as `socket(2)` takes it. A test module that also imports a C library whose header includes
/// <sys/socket.h> (EndToEndTests imports CSRT) owns the constant through that library under `MemberImportVisibility`
/// in optimized builds, so its files take it from here instead.
public let streamSocketType = Int32(SOCK_STREAM.rawValue)

/// `SOCK_DGRAM` as `socket(2)` takes it (see `streamSocketType`).
public let datagramSocketType = Int32(SOCK_DGRAM.rawValue)
