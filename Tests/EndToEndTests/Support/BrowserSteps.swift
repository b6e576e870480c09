import Foundation
import Glibc
import TestSupport

/// A page opened in Debian's headless chromium (Playwright, `scripts/e2e-browser/steps.py`) and a list of steps run
/// against it and the origin: waits on the page's DOM, screenshots, requests. Reuses what `BrowserPlayer.install`
/// laid down (chromium, the Playwright venv).
enum BrowserSteps {
    /// One step (see steps.py for what each does).
    struct Step: Encodable, Sendable {
        let `do`: String
        var js: String? = nil
        var timeout: Double? = nil
        var path: String? = nil
        var method: String? = nil
        var url: String? = nil
        var body: String? = nil
        var contains: String? = nil
        var seconds: Double? = nil

        /// Evaluates `js` every 100 ms until it is truthy (an object: its `ok`), at most `timeout` seconds.
        static func waitFor(_ js: String, timeout: Double) -> Step { Step(do: "waitFor", js: js, timeout: timeout) }
        /// Evaluates `js` once.
        static func eval(_ js: String) -> Step { Step(do: "eval", js: js) }
        /// A PNG of the viewport.
        static func screenshot(_ path: String) -> Step { Step(do: "screenshot", path: path) }
        /// A request from the driver (not the page); `{now}` in the body becomes the current UTC time.
        static func request(_ method: String, _ url: String, body: String? = nil) -> Step {
            Step(do: "request", method: method, url: url, body: body)
        }
        /// GETs `url` every 100 ms until its text contains `text`.
        static func waitText(_ url: String, contains text: String, timeout: Double) -> Step {
            Step(do: "waitText", timeout: timeout, url: url, contains: text)
        }
        static func sleep(_ seconds: Double) -> Step { Step(do: "sleep", seconds: seconds) }
    }

    /// What a step found.
    struct Result: @unchecked Sendable {
        let object: [String: Any]
        var ok: Bool { object["ok"] as? Bool ?? false }
        /// Seconds the step took.
        var elapsed: Double { (object["elapsed"] as? NSNumber)?.doubleValue ?? -1 }
        /// The evaluated value (eval, waitFor).
        var value: Any? { object["value"] }
        var description: String {
            (try? String(decoding: JSONSerialization.data(withJSONObject: object), as: UTF8.self)) ?? "\(object)"
        }
    }

    struct Report: @unchecked Sendable {
        let steps: [Result]
        let console: [String]
        let browser: String?
    }

    /// Opens `url` in a `width` x `height` viewport, runs `steps`, returns what each found. `headers` go with every
    /// request of the page and of the steps (an admin bearer token, as a reverse proxy in front would add it).
    static func run(
        url: String, steps: [Step], directory: URL, label: String, width: Int = 1280, height: Int = 800,
        headers: [String: String] = [:], timeout: Duration = .seconds(120)
    ) async throws -> Report {
        _ = try await BrowserPlayer.install(directory: directory)
        let root = OriginProcess.packageRoot
        struct Spec: Encodable {
            let url: String
            let width: Int
            let height: Int
            let headers: [String: String]
            let steps: [Step]
        }
        let spec = directory.appendingPathComponent("\(label).json")
        try JSONEncoder().encode(Spec(url: url, width: width, height: height, headers: headers, steps: steps)).write(
            to: spec)
        let child = try ChildProcess(
            executable: root.appendingPathComponent(".build/browser-venv/bin/python"),
            arguments: [root.appendingPathComponent("scripts/e2e-browser/steps.py").path, spec.path],
            directory: directory, label: label)
        guard await child.wait(timeout: timeout) != nil else {
            child.signal(SIGKILL)
            _ = await child.wait(timeout: .seconds(5))
            throw EndToEndError("steps.py did not finish; stderr:\n\(child.standardError.suffix(3000))")
        }
        guard
            let object = try? JSONSerialization.jsonObject(with: Data(child.standardOutput.utf8)) as? [String: Any]
        else {
            throw EndToEndError(
                "steps.py printed no report; stdout:\n\(child.standardOutput.suffix(2000))\nstderr:\n"
                    + child.standardError.suffix(3000))
        }
        if let error = object["error"] as? String { throw EndToEndError("steps.py: \(error)") }
        let steps = (object["steps"] as? [[String: Any]] ?? []).map(Result.init(object:))
        return Report(
            steps: steps, console: object["console"] as? [String] ?? [], browser: object["browser"] as? String)
    }
}
