import Foundation
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// The operator's status page (`/status`) in headless chromium on the real binary (two channels of the built-in
    /// source, an admin token sent by the browser as a proxy in front would add it): the demo channel's timeline
    /// matches its playlists, an outage shows as GAP marks, a posted marker as a flag with its SCTE-35 kind.
    @Suite("End to end: the status page in the browser", .tags(.endToEnd))
    struct StatusPageTests {
        static let adminToken = "status-page-e2e-admin-token"
        static let configuration = """
            logLevel: info
            admin:
              token: \(adminToken)
            channels:
              - name: demo
                source: test-source
                segmentDuration: 2
                window: { segments: 6 }
                renditions:
                  - { name: 360p, profile: 360p }
                  - { name: 180p, profile: 180p }
              - name: news
                source: test-source
                segmentDuration: 2
                window: { segments: 6 }
                renditions:
                  - { name: 360p, profile: 360p }
            """

        /// JavaScript: for each rendition of `demo`, the MSNs the page draws as listed entries and those the
        /// rendition's playlist lists now; ok when they are the same.
        static let timelineMatchesPlaylists = """
            async () => {
              const out = { ok: true, renditions: {} };
              for (const r of ['180p', '360p']) {
                const text = await (await fetch(`/live/demo/${r}/index.m3u8`, { cache: 'no-store' })).text();
                const sequence = Number((text.match(/#EXT-X-MEDIA-SEQUENCE:(\\d+)/) || [])[1]);
                const count = (text.match(/^#EXTINF:/gm) || []).length;
                const gaps = (text.match(/^#EXT-X-GAP/gm) || []).length;
                const playlist = Array.from({ length: count }, (_, i) => sequence + i);
                const lane = document.querySelector(`[data-channel="demo"] g[data-rendition="${r}"]`);
                const entries = lane ? [...lane.querySelectorAll('rect.entry:not(.retained)')] : [];
                const dom = entries.map((e) => Number(e.dataset.msn)).sort((a, b) => a - b);
                const domGaps = entries.filter((e) => e.classList.contains('gap')).length;
                out.renditions[r] = { playlist, dom, gaps, domGaps };
                if (JSON.stringify(playlist) !== JSON.stringify(dom) || gaps !== domGaps) out.ok = false;
              }
              return out;
            }
            """

        static func count(_ selector: String) -> String {
            "() => document.querySelectorAll('\(selector)').length"
        }

        @Test("timeline matches the playlists; GAP marks within 2 s of the playlist; a posted marker appears")
        func statusPageFollowsTheChannel() async throws {
            try await OriginProcess.withRunning(configuration: Self.configuration, label: "status-page") { origin in
                let base = origin.baseURL
                let directory = origin.directory
                let low = "[data-channel=\"demo\"] g[data-rendition=\"180p\"]"
                let high = "[data-channel=\"demo\"] g[data-rendition=\"360p\"]"
                let steps: [BrowserSteps.Step] = [
                    // 0: both lanes drawn with a few listed segments.
                    .waitFor(
                        "() => [...document.querySelectorAll('[data-channel=\"demo\"] g[data-rendition]')]"
                            + ".filter((g) => Number(g.dataset.listed) >= 4).length === 2", timeout: 25),
                    // 1: every listed entry of the playlists, no more, no less.
                    .waitFor(Self.timelineMatchesPlaylists, timeout: 5),
                    .screenshot(directory.appendingPathComponent("status-before.png").path),
                    // 3: 6 s without 180p from the built-in source.
                    .request(
                        "POST", "\(base)/admin/channels/demo/outage", body: #"{"seconds": 6, "renditions": ["180p"]}"#),
                    // 4: the first GAP in the playlist, then 5: on the page.
                    .waitText("\(base)/live/demo/180p/index.m3u8", contains: "#EXT-X-GAP", timeout: 10),
                    .waitFor("() => document.querySelectorAll('\(low) rect.entry.gap').length > 0", timeout: 5),
                    // 6: a marker, splice out, open for 20 s planned.
                    .request(
                        "POST", "\(base)/admin/channels/demo/dateranges",
                        body: #"{"id": "e2e-break", "class": "com.example.ad", "startDate": "{now}", "#
                            + #""plannedDuration": 20, "scte35": "out"}"#),
                    // 7: its flag, labelled with the kind.
                    .waitFor(
                        "() => { const f = document.querySelector('[data-channel=\"demo\"] [data-marker-id=\"e2e-break\"]');"
                            + " return f !== null && f.textContent.includes('e2e-break · splice out'); }",
                        timeout: 5),
                    // 8: 180p back: the discontinuity at the join, in both lanes.
                    .waitFor(
                        "() => document.querySelectorAll('\(low) line.disc').length > 0"
                            + " && document.querySelectorAll('\(high) line.disc').length > 0", timeout: 15),
                    // 9: still the playlists' entries, GAPs included.
                    .waitFor(Self.timelineMatchesPlaylists, timeout: 5),
                    .eval(Self.count("\(high) rect.entry.gap")),
                    // 11: demo's ▶ pressed (the page opens on the first channel with three listed segments,
                    // demo or news, whichever listed them first), a picture in the player (recorded, not required:
                    // native HLS is the browser's), then the screenshot for docs/status-page.png.
                    .waitFor(
                        "() => { if (!window.demoPressed) { window.demoPressed = true;"
                            + " document.querySelector('[data-channel=\"demo\"] .play').click(); }"
                            + " const v = document.getElementById('player'); return v.readyState >= 2"
                            + " || v.canPlayType('application/vnd.apple.mpegurl') === ''; }", timeout: 6),
                    .screenshot(directory.appendingPathComponent("status-page.png").path),
                    // 13: the player.
                    .eval(
                        "() => { const v = document.getElementById('player'); return { native:"
                            + " v.canPlayType('application/vnd.apple.mpegurl'), src: v.currentSrc, hidden: v.hidden,"
                            + " note: document.getElementById('player-note').textContent }; }"),
                ]
                let report = try await BrowserSteps.run(
                    url: "\(base)/status", steps: steps, directory: directory, label: "status-page", height: 410,
                    headers: ["Authorization": "Bearer \(Self.adminToken)"])
                let results = report.steps
                try #require(results.count == steps.count, "\(results.map(\.description))")
                print("status page (chromium \(report.browser ?? "?")): screenshots in \(directory.path)")
                for (index, result) in results.enumerated() {
                    print("  step \(index): \(result.description.prefix(600))")
                }

                #expect(results[0].ok, "the lanes never showed 4 listed segments: \(results[0].description)")
                #expect(results[1].ok, "the page's entries differ from the playlists: \(results[1].description)")
                #expect(results[3].ok, "the outage was refused: \(results[3].description)")
                #expect(results[4].ok, "no GAP in 180p's playlist within 10 s of the outage")
                #expect(results[5].ok, "no GAP mark on the page: \(results[5].description)")
                #expect(
                    results[5].elapsed <= 2,
                    "the GAP mark appeared \(results[5].elapsed) s after the playlist listed the GAP (at most 2 s)")
                #expect(results[6].ok, "the marker was refused: \(results[6].description)")
                #expect(results[7].ok && results[7].elapsed <= 2, "marker flag: \(results[7].description)")
                #expect(results[8].ok, "no discontinuity mark after the outage: \(results[8].description)")
                #expect(results[9].ok, "after the outage: \(results[9].description)")
                #expect(results[10].value as? Int == 0, "360p was never out, yet shows GAP marks")
                let player = results[13].value as? [String: Any] ?? [:]
                if let native = player["native"] as? String, !native.isEmpty {
                    #expect((player["src"] as? String)?.hasSuffix("/live/demo/index.m3u8") == true, "\(player)")
                } else {
                    #expect((player["note"] as? String)?.contains("does not play HLS natively") == true, "\(player)")
                }
                #expect(!report.console.contains { $0.hasPrefix("pageerror") }, "\(report.console)")
            }
        }

        /// Not a check of speed: prints what a poll and an update cost with 100 channels of 2 renditions (the
        /// built-in source) in chromium: the JSON's size and fetch time, the steady update of the channels in view
        /// and of all 100, and a full redraw. docs/status-page.md quotes it.
        @Test("100 channels: every channel is drawn; poll and update times are printed")
        func hundredChannelsAreMeasured() async throws {
            var configuration = "logLevel: warning\nstorage: { sync: batched }\nchannels:\n"
            for index in 0..<100 {
                configuration += """
                      - name: ch\(String(format: "%03d", index))
                        source: test-source
                        segmentDuration: 2
                        window: { segments: 6 }
                        renditions: [{ name: 360p, profile: 360p }, { name: 180p, profile: 180p }]

                    """
            }
            try await OriginProcess.withRunning(configuration: configuration, label: "status-100") { origin in
                let history = """
                    () => { const h = statusPage.history.slice(-6); const avg = (k) => h.reduce((s, x) => s + x[k], 0)
                      / Math.max(h.length, 1); return { fetchMs: avg('fetchMs'), parseMs: avg('parseMs'),
                      renderMs: avg('renderMs'), maxRenderMs: Math.max(...h.map((x) => x.renderMs)),
                      medianRenderMs: h.map((x) => x.renderMs).sort((a, b) => a - b)[h.length >> 1],
                      bytes: statusPage.stats.bytes, channels: statusPage.stats.channels,
                      rects: document.querySelectorAll('rect.entry').length }; }
                    """
                let steps: [BrowserSteps.Step] = [
                    .waitFor(
                        "() => statusPage.stats.channels === 100 && document.querySelectorAll('article.channel').length"
                            + " === 100 && document.querySelectorAll('g[data-listed=\"6\"]').length >= 4", timeout: 30),
                    .sleep(8),
                    .eval(history),
                    .eval("() => { statusPage.allVisible = true; return true; }"),
                    .waitFor("() => document.querySelectorAll('g[data-listed=\"6\"]').length === 200", timeout: 10),
                    .sleep(8),
                    .eval(history),
                    .eval("() => statusPage.redrawAll()"),
                ]
                let report = try await BrowserSteps.run(
                    url: "\(origin.baseURL)/status", steps: steps, directory: origin.directory, label: "status-100")
                let results = report.steps
                try #require(results.count == steps.count, "\(results.map(\.description))")
                #expect(results[0].ok, "\(results[0].description)")
                #expect(results[4].ok, "not every lane was drawn with 6 listed entries: \(results[4].description)")
                print(
                    "status page, 100 channels x 2 renditions: in view only \(results[2].description); "
                        + "all drawn \(results[6].description); full redraw \(results[7].value ?? "?") ms")
            }
        }
    }
}
