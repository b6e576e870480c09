// Attaches one player to the page's <video> and exposes what it does as window.harness, for play.py to sample.
//   ?player=hlsjs    hls.js 1.6 from the gradio wheel: its export t(video, url, onParsed) returns an Hls instance
//   ?player=native   the browser's own HLS (video.src = the multivariant playlist)
//   ?player=videojs  video.js 7.5 with its bundled VHS (http-streaming), native HLS overridden
// Sound is measured two ways: the decoder's byte count (webkitAudioDecodedByteCount) and the peak level an
// AnalyserNode sees on the element's output (silence and filler stay at 0).

const params = new URLSearchParams(location.search);
const playerName = params.get("player") || "hlsjs";
const source = params.get("src");
// video.js: run a stalled VHS 1.9.3 queue on (see stalledVHSQueues) only when the page asks (?vhsqueues=run, set by
// play.py from the run's "runStalledVHSQueues"); otherwise stalls are only reported, in each sample's stalledQueues.
const runStalledVHSQueues = params.get("vhsqueues") === "run";
const video = document.getElementById("video");

const state = {
    player: playerName,
    ready: false,
    errors: [],
    events: [],
    cues: {},               // "kind/label/language" -> [{start, end, text}] ever seen
    audioPeak: 0,           // largest |sample| seen by the analyser since the last sample() call
    audioPeakEver: 0,
    firstFragmentStart: {}, // hls.js: fragment type (main, audio, subtitle) -> frag.start of the first one parsed
    initPTS: [],            // hls.js: [{cc, initPTS, timescale}]: element time = (PTS - initPTS) / timescale
    vhsQueueRuns: [],       // video.js: each stalled VHS queue the harness ran on ("main at 2.41 s: 1 queued")
};

function note(kind, detail) {
    if (state.events.length < 400) state.events.push({ at: performance.now() / 1000, kind, detail });
}

function error(message) {
    if (state.errors.length < 100) state.errors.push(String(message));
}

video.addEventListener("error", () => error(`video element error ${video.error?.code}: ${video.error?.message}`));
for (const name of ["loadedmetadata", "playing", "waiting", "stalled", "ended"]) {
    video.addEventListener(name, () => note("video", name));
}

// The analyser: started on the first "playing" (an AudioContext may start running only then).
let analyser = null;
function startAnalyser() {
    if (analyser) return;
    try {
        const context = new AudioContext();
        const node = context.createMediaElementSource(video);
        analyser = context.createAnalyser();
        analyser.fftSize = 2048;
        node.connect(analyser);
        analyser.connect(context.destination);
        context.resume().catch((e) => error(`AudioContext.resume: ${e}`));
        const buffer = new Float32Array(analyser.fftSize);
        setInterval(() => {
            analyser.getFloatTimeDomainData(buffer);
            let peak = 0;
            for (const value of buffer) peak = Math.max(peak, Math.abs(value));
            state.audioPeak = Math.max(state.audioPeak, peak);
            state.audioPeakEver = Math.max(state.audioPeakEver, peak);
        }, 50);
    } catch (e) {
        error(`analyser: ${e}`);
    }
}
video.addEventListener("playing", startAnalyser);

function collectCues() {
    const list = vjs ? vjs.textTracks() : video.textTracks;
    for (let i = 0; i < list.length; i++) {
        const track = list[i];
        const key = `${track.kind}/${track.label}/${track.language}`;
        const known = (state.cues[key] ||= []);
        const cues = track.cues || [];
        for (let j = 0; j < cues.length; j++) {
            const cue = cues[j];
            if (!known.some((c) => c.start === cue.startTime && c.text === cue.text)) {
                known.push({ start: cue.startTime, end: cue.endTime, text: cue.text });
            }
        }
    }
}

function trackList(list) {
    if (!list) return null;
    const tracks = [];
    for (let i = 0; i < list.length; i++) {
        const t = list[i];
        tracks.push({ label: t.label, language: t.language, kind: t.kind, enabled: t.enabled, mode: t.mode });
    }
    return tracks;
}

let hls = null;
let vjs = null;

const players = {
    async hlsjs() {
        const module = await import("./assets/hls.js");
        // ?cmcd=query|headers: hls.js sends CMCD (CTA-5004). The wrapper takes no configuration: reach the class
        // through a throwaway instance and put `cmcd` into its default configuration before the real one is made.
        // The throwaway loads an inline playlist, not the stream: destroyed at once, a request of the stream's would
        // be aborted (net::ERR_ABORTED) whenever it had already started, and counted as a failed request.
        const cmcd = params.get("cmcd");
        if (cmcd === "query" || cmcd === "headers") {
            const probe = module.t(document.createElement("video"), "data:application/vnd.apple.mpegurl,%23EXTM3U");
            const Hls = probe.constructor;
            probe.destroy();
            Hls.DefaultConfig = { ...Hls.DefaultConfig, cmcd: { useHeaders: cmcd === "headers" } };
            note("hls", `CMCD ${cmcd}`);
        }
        hls = module.t(video, source, () => {
            note("hls", "MANIFEST_PARSED");
            video.play().catch((e) => error(`play(): ${e}`));
        });
        // ?catchup=R: hls.js plays up to R x speed while behind its latency target (`maxLiveSyncPlaybackRate`,
        // default 1: never catches up); the controllers read the live config object.
        const catchUp = Number(params.get("catchup"));
        if (catchUp > 1) hls.config.maxLiveSyncPlaybackRate = catchUp;
        // ?stallincrease=S: seconds hls.js adds to its latency target at each stall (`liveSyncOnStallIncrease`,
        // default 1, up to one target duration: after an outage it aims that much further behind for good).
        const stallIncrease = params.get("stallincrease");
        if (stallIncrease !== null && Number.isFinite(Number(stallIncrease))) {
            hls.config.liveSyncOnStallIncrease = Number(stallIncrease);
        }
        const Events = hls.constructor.Events;
        hls.on(Events.ERROR, (_, data) => {
            note("hls-error", `${data.fatal ? "FATAL " : ""}${data.type} ${data.details}`);
            if (data.fatal) error(`hls.js fatal ${data.type} ${data.details}`);
        });
        // Content Steering: each manifest hls.js loaded, as "<wall clock ms> <PATHWAY-PRIORITY, comma-separated> <URL>".
        hls.on(Events.STEERING_MANIFEST_LOADED, (_, data) => {
            const priority = data.steeringManifest?.["PATHWAY-PRIORITY"] ?? [];
            note("hls-steering", `${Date.now()} ${priority.join(",")} ${data.url}`);
        });
        // Keys fetched (AES-128): the URL as hls.js resolved it, after variable substitution.
        hls.on(Events.KEY_LOADED, (_, data) => note("hls-key", data.keyInfo?.decryptdata?.uri ?? data.frag?.decryptdata?.uri));
        hls.on(Events.AUDIO_TRACK_SWITCHED, (_, data) => note("hls", `AUDIO_TRACK_SWITCHED ${data.id}`));
        hls.on(Events.SUBTITLE_TRACK_SWITCH, (_, data) => note("hls", `SUBTITLE_TRACK_SWITCH ${data.id}`));
        hls.on(Events.NON_NATIVE_TEXT_TRACKS_FOUND, (_, data) => {
            note("hls", `NON_NATIVE_TEXT_TRACKS ${data.tracks.length}`);
        });
        hls.on(Events.INIT_PTS_FOUND, (_, data) => {
            state.initPTS.push({ cc: data.frag.cc, initPTS: data.initPTS, timescale: data.timescale });
        });
        hls.on(Events.FRAG_PARSED, (_, data) => {
            const frag = data.frag;
            const key = `${frag.type}`;
            if (!(key in state.firstFragmentStart)) state.firstFragmentStart[key] = frag.start;
        });
        // HLS Interstitials: what hls.interstitialsManager does (schedule changes, asset lists, asset players).
        let scheduled = -1;
        hls.on(Events.INTERSTITIALS_UPDATED, (_, data) => {
            const count = data.schedule?.filter((item) => item.event).length ?? 0;
            if (count !== scheduled) note("hls-interstitial", `INTERSTITIALS_UPDATED ${count} scheduled`);
            scheduled = count;
        });
        for (const name of [
            "ASSET_LIST_LOADING", "ASSET_LIST_LOADED", "INTERSTITIAL_STARTED", "INTERSTITIAL_ASSET_PLAYER_CREATED",
            "INTERSTITIAL_ASSET_STARTED", "INTERSTITIAL_ASSET_ENDED", "INTERSTITIAL_ASSET_ERROR", "INTERSTITIAL_ENDED",
            "INTERSTITIALS_PRIMARY_RESUMED",
        ]) {
            if (!Events[name]) continue;
            hls.on(Events[name], (_, data) => {
                const id = data?.event?.identifier ?? data?.asset?.identifier ?? "";
                const more = data?.error ? ` ${data.error}` : data?.assetListResponse ? " " + JSON.stringify(data.assetListResponse).slice(0, 160) : "";
                note("hls-interstitial", `${name} ${id}${more} at ${video.currentTime.toFixed(2)}`);
            });
        }
    },
    async native() {
        video.src = source;
        video.play().catch((e) => error(`play(): ${e}`));
    },
    async videojs() {
        await new Promise((resolve, reject) => {
            const script = document.createElement("script");
            script.src = "assets/video.js";
            script.onload = resolve;
            script.onerror = () => reject(new Error("cannot load assets/video.js"));
            document.head.appendChild(script);
        });
        const options = {
            html5: {
                vhs: { overrideNative: true },
                hls: { overrideNative: true },
                nativeAudioTracks: false,
                nativeVideoTracks: false,
                nativeTextTracks: false,
            },
        };
        vjs = window.videojs(video, options);
        vjs.on("error", () => error(`video.js error: ${JSON.stringify(vjs.error())}`));
        vjs.src({ src: source, type: "application/x-mpegURL" });
        vjs.play()?.catch?.((e) => error(`play(): ${e}`));
        // When the page asks (?vhsqueues=run), a stalled VHS queue (see stalledVHSQueues) is run on as VHS 1.10.2
        // does: its next operation, once. Each time is noted ("vhs-queue") and listed in state.vhsQueueRuns, for the
        // test to say. Without it a stall stays stalled, for the test to see.
        if (!runStalledVHSQueues) return;
        setInterval(() => {
            const controller = vjs.tech({ IWillNotUseThisInPlugins: true })?.hls?.masterPlaylistController_;
            for (const name of stalledVHSQueues() ?? []) {
                const updater = controller[`${name}SegmentLoader_`].sourceUpdater_;
                const detail = `${name} at ${(performance.now() / 1000).toFixed(2)} s: ${updater.callbacks_.length} queued`;
                note("vhs-queue", `stalled in ${detail}; ran the next (videojs/http-streaming#480)`);
                state.vhsQueueRuns.push(detail);
                updater.runCallback_();
            }
        }, 100);
    },
};

// video.js 7.5.5 bundles VHS 1.9.3, whose SourceUpdater runs its queue one operation per updateend. With demuxed
// audio the main loader waits for the audio SourceBuffer; when that comes after the main loader queued its first
// segment (a timestampOffset change, then the append), only the timestampOffset runs: it fires no updateend, the
// append waits for good, the video SourceBuffer never gets its init segment and the element stays at readyState 0
// with the audio alone buffered (videojs/http-streaming#480, fixed in VHS 1.10.2). The loaders ("main", "audio")
// whose queue is in that state: started, not updating, still holding an operation, and the last operation run was one
// that fires no updateend (pendingCallback_ left undefined: only a timestampOffset change, or an abort without a
// callback, does that; an append leaves its done function, a remove the noop, and updateend resets it to null). A
// remove queued without a callback (trimBackBuffer_) leaves the noop: between its SourceBuffer's updating going false
// and updateend being handled the queue is idle with operations waiting, and that is not a stall. Which answer comes
// first decides it (the audio playlist, or the main loader's first segment); on a loaded 2-core machine the main
// segment often wins. A page that asks (?vhsqueues=run: AlternateRenditionsTests only) has the harness run such a
// queue on (in videojs()), as the fix does: the player then plays what the origin served, and any other failure to
// start is still the test's to see. Every other page only reports it (stalledQueues in each sample).
function stalledVHSQueues() {
    const controller = vjs?.tech({ IWillNotUseThisInPlugins: true })?.hls?.masterPlaylistController_;
    if (!controller) return null;
    const stalled = [];
    for (const [name, loader] of [["main", controller.mainSegmentLoader_], ["audio", controller.audioSegmentLoader_]]) {
        const updater = loader?.sourceUpdater_;
        if (updater?.started_ && updater.callbacks_?.length > 0 && !updater.updating()
            && updater.pendingCallback_ === undefined) stalled.push(name);
    }
    return stalled;
}

window.harness = {
    state,
    // One sample: what play.py records every half second.
    sample() {
        collectCues();
        const element = vjs ? vjs.tech({ IWillNotUseThisInPlugins: true }).el() : video;
        const result = {
            currentTime: element.currentTime,
            paused: element.paused,
            readyState: element.readyState,
            buffered: Array.from({ length: element.buffered.length }, (_, i) =>
                `${element.buffered.start(i).toFixed(3)}-${element.buffered.end(i).toFixed(3)}`).join(" "),
            audioBytes: element.webkitAudioDecodedByteCount ?? null,
            videoBytes: element.webkitVideoDecodedByteCount ?? null,
            audioPeak: state.audioPeak,
            errors: state.errors.length,
            // Low latency: hls.js's own estimate (seconds behind the live edge), how far the wall clock is ahead of
            // the PROGRAM-DATE-TIME being shown, and the end of the seekable range (native players).
            wallClock: Date.now() / 1000,
            latency: hls && Number.isFinite(hls.latency) ? hls.latency : null,
            targetLatency: hls && Number.isFinite(hls.targetLatency) ? hls.targetLatency : null,
            dateLatency: hls && hls.playingDate ? (Date.now() - hls.playingDate.getTime()) / 1000 : null,
            seekableEnd: element.seekable?.length ? element.seekable.end(element.seekable.length - 1) : null,
            // video.js: the VHS loaders whose queue stalled (see stalledVHSQueues).
            stalledQueues: stalledVHSQueues(),
        };
        state.audioPeak = 0;
        return result;
    },
    // The tracks the player exposes now.
    tracks() {
        collectCues();
        const result = {
            nativeAudioTracks: trackList(video.audioTracks),
            textTracks: trackList(video.textTracks),
        };
        if (hls) {
            result.audioTracks = hls.audioTracks.map((t) => ({ name: t.name, lang: t.lang, default: t.default }));
            result.audioTrack = hls.audioTrack;
            result.subtitleTracks = hls.subtitleTracks.map((t) => ({ name: t.name, lang: t.lang }));
            result.subtitleTrack = hls.subtitleTrack;
            result.levels = hls.levels.map((l) => ({
                bitrate: l.bitrate,
                codecs: l.codecSet,
                audioCodec: l.audioCodec,
            }));
        }
        if (vjs) {
            result.audioTracks = trackList(vjs.audioTracks()).map((t) => ({ name: t.label, lang: t.language }));
            result.textTracks = trackList(vjs.textTracks());
        }
        return result;
    },
    // Selects the audio track with this language; true when one was found.
    switchAudio(language) {
        if (hls) {
            const index = hls.audioTracks.findIndex((t) => t.lang === language);
            if (index < 0) return false;
            hls.audioTrack = index;
            return true;
        }
        const list = vjs ? vjs.audioTracks() : video.audioTracks;
        if (!list) return false;
        let found = false;
        for (let i = 0; i < list.length; i++) {
            if (list[i].language === language) found = true;
        }
        if (!found) return false;
        for (let i = 0; i < list.length; i++) list[i].enabled = list[i].language === language;
        return true;
    },
    // Turns the first subtitle track on (cues load and show).
    showSubtitles() {
        if (hls) {
            hls.subtitleDisplay = true;
            if (hls.subtitleTracks.length > 0) hls.subtitleTrack = 0;
        }
        const list = vjs ? vjs.textTracks() : video.textTracks;
        for (let i = 0; i < list.length; i++) {
            if (list[i].kind === "subtitles" || list[i].kind === "captions") list[i].mode = "showing";
        }
        return true;
    },
};

Promise.resolve()
    .then(() => players[playerName]?.())
    .then(() => {
        state.ready = true;
    })
    .catch((e) => error(`attaching ${playerName}: ${e}`));
