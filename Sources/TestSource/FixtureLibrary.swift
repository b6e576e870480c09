import Foundation

/// The parsed fixtures of one profile.
struct ProfileFixtures: Sendable {
    /// The video loop: whole GOPs, each starting with an IDR that carries SPS and PPS.
    let videoLoop: [H264AccessUnit]
    /// The slate: one GOP of a still picture, same codec configuration as the loop.
    let slate: [H264AccessUnit]
}

/// The test source's fixtures, read from the module's resources and parsed once per process.
struct FixtureLibrary: Sendable {
    /// The shared audio loop: ADTS frames of a seamless 440 Hz tone.
    let audioLoop: [[UInt8]]
    /// One ADTS frame of silence.
    let silence: [UInt8]
    /// The video fixtures per profile name.
    let profiles: [String: ProfileFixtures]

    /// The library, loaded at first use (thread-safe, as every static `let`) and then kept for the process.
    static let shared: Result<FixtureLibrary, TestSourceError> = Result { () throws(TestSourceError) in
        try FixtureLibrary(directory: fixtureDirectory())
    }

    /// The fixtures of one built-in profile.
    static func fixtures(for profile: TestSourceProfile) throws(TestSourceError) -> (FixtureLibrary, ProfileFixtures) {
        let library = try shared.get()
        guard let fixtures = library.profiles[profile.name] else {
            throw TestSourceError(.fixtureUnavailable, "no fixtures for profile \(profile.name)")
        }
        return (library, fixtures)
    }

    /// Reads and checks every fixture in `directory`.
    init(directory: URL) throws(TestSourceError) {
        audioLoop = try ADTSFrame.split(Self.read("audio-loop.aac", in: directory), name: "audio-loop.aac")
        let silenceName = "audio-silence.aac"
        let silenceFrames = try ADTSFrame.split(Self.read(silenceName, in: directory), name: silenceName)
        guard audioLoop.count > 0, silenceFrames.count == 1 else {
            throw TestSourceError(.fixtureUnavailable, "audio fixtures: expected a loop and exactly one silent frame")
        }
        silence = silenceFrames[0]
        var profiles: [String: ProfileFixtures] = [:]
        for profile in TestSourceProfile.builtIn {
            if let shared = profiles[profile.fixtureName] {
                profiles[profile.name] = shared
                continue
            }
            let loopName = "video-\(profile.fixtureName).h264"
            let slateName = "slate-\(profile.fixtureName).h264"
            let loop = try H264AccessUnit.split(annexB: Self.read(loopName, in: directory), name: loopName)
            let slate = try H264AccessUnit.split(annexB: Self.read(slateName, in: directory), name: slateName)
            try Self.check(loop, of: profile, name: loopName)
            try Self.check(slate, of: profile, name: slateName)
            profiles[profile.name] = ProfileFixtures(videoLoop: loop, slate: slate)
        }
        self.profiles = profiles
    }

    /// The bundle SwiftPM copies the `Fixtures` resource into (`<package>_<target>.resources`).
    static let bundleName = "hlsorigin_TestSource.resources"

    /// The directory of the module's copied `Fixtures` resource: in the bundle beside the running executable's real
    /// path (the build directory; `/usr/lib/hlsorigin` in the Debian package, reached through the `/usr/bin`
    /// symlink), else beside the bundle holding this code (an `.xctest` bundle run by a test tool elsewhere). Not
    /// `Bundle.module`, which ends the process (`fatalError`) when the bundle is missing: a test source channel then
    /// reports the error and the process lives.
    static func fixtureDirectory() throws(TestSourceError) -> URL {
        let executable = Bundle.main.executableURL?.resolvingSymlinksInPath().deletingLastPathComponent()
        return try fixtureDirectory(
            besideExecutableIn: executable ?? Bundle.main.bundleURL,
            fallback: Bundle(for: FixtureBundleFinder.self).bundleURL.deletingLastPathComponent())
    }

    /// The `Fixtures` directory of the bundle in `directory`, else in `fallback`; the error names the path looked
    /// for beside the executable and the bundle to install.
    static func fixtureDirectory(besideExecutableIn directory: URL, fallback: URL?) throws(TestSourceError) -> URL {
        let candidates = [directory, fallback].compactMap { $0 }.map {
            $0.appendingPathComponent(bundleName).appendingPathComponent("Fixtures")
        }
        for candidate in candidates {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), isDirectory.boolValue {
                return candidate
            }
        }
        throw TestSourceError(
            .fixtureUnavailable,
            "the test source's fixtures \(candidates[0].path) are missing: install the resource bundle \(bundleName) "
                + "beside the hlsorigin binary")
    }

    private static func read(_ name: String, in directory: URL) throws(TestSourceError) -> [UInt8] {
        do {
            return try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
        } catch {
            throw TestSourceError(.fixtureUnavailable, "\(name): \(error)")
        }
    }

    /// Checks the GOP structure the remuxer relies on: whole GOPs of `gopDuration` seconds, an IDR with SPS and
    /// PPS exactly at every GOP start and nowhere else, and the codec string of the profile.
    private static func check(
        _ units: [H264AccessUnit], of profile: TestSourceProfile, name: String
    ) throws(TestSourceError) {
        let gopFrames = profile.framesPerSecond * profile.gopDuration
        guard !units.isEmpty, units.count % gopFrames == 0 else {
            throw TestSourceError(
                .fixtureUnavailable, "\(name): \(units.count) frames is not whole GOPs of \(gopFrames)")
        }
        for (index, unit) in units.enumerated() {
            let startsGOP = index % gopFrames == 0
            guard unit.isIDR == startsGOP else {
                throw TestSourceError(
                    .fixtureUnavailable, "\(name): frame \(index) IDR=\(unit.isIDR), expected \(startsGOP)")
            }
            if startsGOP, !(unit.nalUnitTypes.contains(7) && unit.nalUnitTypes.contains(8)) {
                throw TestSourceError(.fixtureUnavailable, "\(name): IDR frame \(index) lacks SPS or PPS")
            }
        }
        let codec = codecString(of: units[0])
        guard codec == profile.videoCodec else {
            throw TestSourceError(
                .fixtureUnavailable, "\(name): SPS says \(codec ?? "nothing"), profile says \(profile.videoCodec)")
        }
    }

    /// `avc1.PPCCLL` from the first SPS of an access unit.
    private static func codecString(of unit: H264AccessUnit) -> String? {
        let bytes = unit.bytes
        var index = 0
        while index + 6 < bytes.count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1, bytes[index + 3] & 0x1F == 7 {
                let hex = bytes[index + 4...index + 6].map { byte in
                    let digits = String(byte, radix: 16)
                    return digits.count == 1 ? "0" + digits : digits
                }
                return "avc1." + hex.joined()
            }
            index += 1
        }
        return nil
    }
}

/// A class of this module, for `Bundle(for:)`: the bundle holding the module's code.
private final class FixtureBundleFinder {}
