import Foundation
import TestSupport

/// A second host for a test: a network namespace the test creates (`ip netns add`) joined to this one by a veth pair
/// with addresses of a private /30 the test picks, so a client started in it (`run`) reaches the origin from a
/// non-loopback address, as a remote host would. `remove()` deletes both (the test calls it also on failure).
final class NetworkNamespace: Sendable {
    /// The namespace's name.
    let name: String
    /// The host side's address (the origin, listening on 0.0.0.0, answers on it).
    let hostAddress: String
    /// The namespace side's address (the remote client's).
    let remoteAddress: String
    /// The veth ends: on the host, and inside the namespace.
    let hostLink: String
    let namespaceLink: String

    /// Whether this process may make network namespaces (root, or CAP_NET_ADMIN and CAP_SYS_ADMIN): tried once.
    static let permitted: Bool = {
        let probe = "hlso-probe-\(getpid())"
        guard let added = try? ChildProcess.runBlocking("ip", ["netns", "add", probe], in: scratch),
            added.status == 0
        else { return false }
        _ = try? ChildProcess.runBlocking("ip", ["netns", "del", probe], in: scratch)
        return true
    }()

    private static var scratch: URL { URL(fileURLWithPath: NSTemporaryDirectory()) }

    /// Creates the namespace, the veth pair and the addresses, and brings the links up.
    init() async throws {
        let tag = "\(getpid() % 10_000)\(Int.random(in: 10...99))"
        name = "hlso-\(tag)"
        hostLink = "vh\(tag)"
        namespaceLink = "vn\(tag)"
        // 10.213.X.Y/30 with a random X and Y: .1 on the host side, .2 in the namespace.
        let base = "10.213.\(Int.random(in: 1...254)).\(Int.random(in: 0...62) * 4)"
        let prefix = base.split(separator: ".").dropLast().joined(separator: ".")
        let last = Int(base.split(separator: ".").last!)!
        hostAddress = "\(prefix).\(last + 1)"
        remoteAddress = "\(prefix).\(last + 2)"
        let steps: [[String]] = [
            ["netns", "add", name],
            ["link", "add", hostLink, "type", "veth", "peer", "name", namespaceLink],
            ["link", "set", namespaceLink, "netns", name],
            ["addr", "add", "\(hostAddress)/30", "dev", hostLink],
            ["link", "set", hostLink, "up"],
            ["netns", "exec", name, "ip", "addr", "add", "\(remoteAddress)/30", "dev", namespaceLink],
            ["netns", "exec", name, "ip", "link", "set", namespaceLink, "up"],
            ["netns", "exec", name, "ip", "link", "set", "lo", "up"],
        ]
        for step in steps {
            // 30 s: creating a namespace waits for the kernel's cleanup of namespaces removed before it (an earlier
            // test's), which took over 10 s once in a full CI run on two busy cores.
            let output = try await ChildProcess.run("ip", step, in: Self.scratch, timeout: .seconds(30))
            guard output.status == 0 else {
                await remove()
                throw EndToEndError("ip \(step.joined(separator: " ")) failed: \(output.standardError)")
            }
        }
    }

    /// Runs a tool inside the namespace (`ip netns exec`): its traffic to `hostAddress` comes from `remoteAddress`.
    func run(
        _ tool: String, _ arguments: [String], in directory: URL, timeout: Duration = .seconds(60)
    ) async throws -> ToolOutput {
        try await ChildProcess.run(
            "ip", ["netns", "exec", name, tool] + arguments, in: directory, timeout: timeout)
    }

    /// Deletes the namespace (its veth end goes with it, and the host end with its peer).
    func remove() async {
        _ = try? await ChildProcess.run("ip", ["netns", "del", name], in: Self.scratch, timeout: .seconds(10))
        _ = try? await ChildProcess.run("ip", ["link", "del", hostLink], in: Self.scratch, timeout: .seconds(10))
    }

    /// Runs `body` with a new namespace and removes the namespace afterwards, also when `body` throws.
    static func with<T>(_ body: (NetworkNamespace) async throws -> T) async throws -> T {
        let namespace = try await NetworkNamespace()
        do {
            let result = try await body(namespace)
            await namespace.remove()
            return result
        } catch {
            await namespace.remove()
            throw error
        }
    }
}
