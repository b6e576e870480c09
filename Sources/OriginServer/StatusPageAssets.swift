import SharedBytes

/// The status page's HTML, CSS and JavaScript (`GET /status`, `/status/status.css`, `/status/status.js`), kept as
/// constants so the binary serves them with nothing beside it (no resource bundle to ship, no CDN, no npm).
/// docs/status-page.md says what the page shows and how it reads `/status/timeline.json`.
enum StatusPageAssets {
    static let html = SharedBytes(
        string: #"""
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>hlsorigin status</title>
            <link rel="stylesheet" href="/status/status.css">
            </head>
            <body>
            <header>
              <h1>hlsorigin <span>status</span></h1>
              <div id="clock" title="the origin's shared clock">--:--:-- UTC</div>
              <div id="summary">loading…</div>
              <label>span
                <select id="span">
                  <option value="auto" selected>auto</option>
                  <option value="30">30 s</option>
                  <option value="60">1 min</option>
                  <option value="120">2 min</option>
                  <option value="300">5 min</option>
                </select>
              </label>
              <input id="filter" type="search" placeholder="filter channels" aria-label="filter channels">
            </header>
            <ul id="legend" aria-label="legend">
              <li><svg width="22" height="12"><rect class="entry seg" width="22" height="12"/></svg>segment</li>
              <li><svg width="22" height="12"><rect class="entry seg retained" width="22" height="12"/></svg>retained
                (left the playlist)</li>
              <li><svg width="22" height="12"><rect class="entry gap" width="22" height="12"/></svg>EXT-X-GAP</li>
              <li><svg width="10" height="14"><line class="disc" x1="5" x2="5" y1="0" y2="14"/></svg>discontinuity</li>
              <li><svg width="10" height="14"><line class="edge" x1="5" x2="5" y1="0" y2="14"/></svg>live edge</li>
              <li><svg width="10" height="14"><line class="now" x1="5" x2="5" y1="0" y2="14"/></svg>now (clock)</li>
              <li><svg width="26" height="14"><line class="pole" x1="2" x2="2" y1="0" y2="14"/>
                <rect class="flag" x="2" y="0" width="22" height="9"/></svg>DATERANGE (SCTE-35 kind)</li>
              <li><span class="badge warn">edge</span> clock − PDT of the newest entry's end; amber over 1.5 TD,
                red over 3 TD</li>
            </ul>
            <main>
              <section id="channels" aria-label="channels"></section>
              <aside id="player-panel">
                <h2 id="player-title">player</h2>
                <video id="player" controls muted playsinline></video>
                <p id="player-note">Select a channel's ▶ to play it.</p>
              </aside>
            </main>
            <p id="error" hidden></p>
            <script src="/status/status.js"></script>
            </body>
            </html>

            """#)

    static let css = SharedBytes(
        string: #"""
            :root {
              --bg: #f6f7f9; --card: #fff; --ink: #1d2330; --muted: #6b7385; --line: #e3e6ec;
              --seg: #8d97a8; --retained: #d3d8e0; --gap: #d7263d; --disc: #7b2cbf; --edge: #138a4a;
              --now: #1d2330; --flag: #1565c0; --warn: #b7791f; --bad: #d7263d;
              font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
            }
            body { margin: 0; background: var(--bg); }
            header { display: flex; gap: 16px; align-items: center; flex-wrap: wrap; padding: 10px 18px;
              background: var(--ink); color: #fff; position: sticky; top: 0; z-index: 2; }
            header h1 { font-size: 17px; margin: 0; font-weight: 650; }
            header h1 span { font-weight: 400; opacity: .7; }
            #clock { font-variant-numeric: tabular-nums; font-family: ui-monospace, monospace; }
            #summary { color: #c9cfdb; flex: 1; font-size: 13px; }
            header select, header input { font: inherit; border-radius: 6px; border: 0; padding: 3px 8px; }
            #legend { display: flex; flex-wrap: wrap; gap: 6px 18px; list-style: none; margin: 0; padding: 8px 18px;
              font-size: 12px; color: var(--muted); border-bottom: 1px solid var(--line); background: var(--card); }
            #legend li { display: flex; align-items: center; gap: 6px; }
            main { display: grid; grid-template-columns: minmax(0, 1fr) 380px; gap: 16px; padding: 14px 18px; }
            @media (max-width: 1000px) { main { grid-template-columns: 1fr; } #player-panel { order: -1; } }
            .channel { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
              padding: 8px 12px 6px; margin-bottom: 10px; }
            .channel.selected { border-color: var(--flag); box-shadow: 0 0 0 2px #1565c033; }
            .channel-head { display: flex; align-items: baseline; gap: 10px; margin-bottom: 4px; }
            .channel-head h2 { font-size: 15px; margin: 0; }
            .channel-head .facts { color: var(--muted); font-size: 12px; flex: 1; }
            .play { border: 1px solid var(--line); background: #fff; border-radius: 6px; cursor: pointer;
              font: inherit; font-size: 12px; padding: 1px 8px; }
            .play:hover { border-color: var(--flag); color: var(--flag); }
            .badge { display: inline-block; border-radius: 9px; padding: 0 7px; font-size: 11px; font-weight: 600;
              background: #eef0f4; color: var(--muted); }
            .badge.bad { background: #fde4e7; color: var(--bad); }
            .badge.warn { background: #fdf1dc; color: var(--warn); }
            .badge.disc { background: #f0e6fa; color: var(--disc); }
            .badge.flagged { background: #e3eefb; color: var(--flag); }
            .timeline { display: grid; grid-template-columns: 190px minmax(0, 1fr); align-items: start; }
            .labels { padding-top: 18px; }
            .labels div { height: 16px; margin-bottom: 6px; font-size: 12px; white-space: nowrap; overflow: hidden;
              display: flex; gap: 6px; align-items: center; }
            .labels b { font-weight: 600; min-width: 42px; }
            .labels .lag { font-size: 11px; color: var(--muted); font-variant-numeric: tabular-nums; }
            .labels .lag.warn { color: var(--warn); } .labels .lag.bad { color: var(--bad); font-weight: 600; }
            svg.tl { width: 100%; display: block; overflow: hidden; }
            .entry.seg { fill: var(--seg); } .entry.retained { fill: var(--retained); }
            .entry.gap { fill: var(--gap); } .entry.gap.retained { fill: #f0a3ad; }
            line.disc { stroke: var(--disc); stroke-width: 3; }
            line.edge { stroke: var(--edge); stroke-width: 2; }
            line.now { stroke: var(--now); stroke-width: 1.5; stroke-dasharray: 3 2; }
            line.grid { stroke: var(--line); } text.tick { fill: var(--muted); font-size: 10px; }
            line.pole { stroke: var(--flag); stroke-width: 1.5; }
            rect.flag { fill: var(--flag); } rect.range { fill: #1565c014; }
            text.flag-label { fill: #fff; font-size: 10px; font-weight: 600; }
            #player-panel { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
              padding: 10px 12px; align-self: start; position: sticky; top: 60px; }
            #player-panel h2 { font-size: 14px; margin: 0 0 8px; }
            #player { width: 100%; background: #000; border-radius: 6px; aspect-ratio: 16 / 9; }
            #player-note { font-size: 12px; color: var(--muted); margin: 6px 0 0; }
            #player-note.warn { color: var(--warn); }
            #error { position: fixed; bottom: 12px; left: 18px; right: 18px; background: #fde4e7; color: var(--bad);
              border-radius: 8px; padding: 8px 12px; margin: 0; }

            """#)

    static let javaScript = SharedBytes(
        string: #"""
            'use strict';
            // The status page: polls /status/timeline.json every second (one request for all channels) and updates
            // only what changed: a channel's entries are diffed by MSN when its snapshot version moves; otherwise only
            // its time shift and lag texts change. Channels scrolled out of view are not drawn until they come back.
            (() => {
              const NS = 'http://www.w3.org/2000/svg';
              const LANE = 16, GAP = 6, TOP = 18, AXIS = 14;
              const page = {
                span: 30000, autoSpan: true, base: null, now: 0, width: 0, views: new Map(), selected: null, polls: 0, history: [],
                // Measurements (docs/status-page.md): draw every channel, also those out of view.
                allVisible: false,
                stats: { fetchMs: 0, parseMs: 0, renderMs: 0, bytes: 0, channels: 0, drawn: 0 },
              };
              window.statusPage = page;
              const $ = (id) => document.getElementById(id);
              const list = $('channels');

              function el(tag, attrs, parent) {
                const node = document.createElementNS(NS, tag);
                for (const key in attrs) node.setAttribute(key, attrs[key]);
                if (parent) parent.appendChild(node);
                return node;
              }
              const x = (t) => (t - page.base) * page.width / page.span;
              const seconds = (ms) => (ms / 1000).toFixed(1) + ' s';
              const clock = (ms) => new Date(ms).toISOString().slice(11, 23);
              const kindText = (kinds) => kinds.length ? kinds.map((k) => k === 'cmd' ? 'cmd' : 'splice ' + k)
                .join(' + ') : 'no SCTE-35';

              const observer = new IntersectionObserver((changes) => {
                for (const change of changes) {
                  const view = page.views.get(change.target.dataset.channel);
                  if (!view) continue;
                  view.visible = change.isIntersecting;
                  if (view.visible && view.data) draw(view);
                }
              }, { rootMargin: '200px' });

              function makeView(name) {
                const card = document.createElement('article');
                card.className = 'channel';
                card.dataset.channel = name;
                card.innerHTML = '<div class="channel-head"><h2></h2><span class="facts"></span>' +
                  '<span class="badges"></span><button class="play" type="button">▶ play</button></div>' +
                  '<div class="timeline"><div class="labels"></div></div>';
                card.querySelector('h2').textContent = name;
                card.querySelector('.play').addEventListener('click', () => select(name));
                const svg = el('svg', { class: 'tl' });
                card.querySelector('.timeline').appendChild(svg);
                const view = { name, card, svg, visible: true, version: null, markersKey: null, lanes: new Map(), labels: [],
                  laneKey: '', data: null };
                view.grid = el('g', {}, svg);
                view.shift = el('g', {}, svg);
                view.ranges = el('g', {}, view.shift);
                view.lanesGroup = el('g', {}, view.shift);
                view.flags = el('g', {}, view.shift);
                view.nowLine = el('line', { class: 'now' }, svg);
                return view;
              }

              function layout(view) {
                const names = view.data.renditions.map((r) => r.name);
                const key = names.join('\n') + '|' + page.width + '|' + page.span;
                if (key === view.laneKey) return;
                view.laneKey = key;
                const height = TOP + names.length * (LANE + GAP) + AXIS;
                view.svg.setAttribute('height', height);
                view.lanesGroup.textContent = '';
                view.lanes.clear();
                const labels = view.card.querySelector('.labels');
                labels.textContent = '';
                names.forEach((name, index) => {
                  const g = el('g', { transform: `translate(0,${TOP + index * (LANE + GAP)})`, 'data-rendition': name },
                    view.lanesGroup);
                  const label = document.createElement('div');
                  label.innerHTML = '<b></b><span class="lag"></span>';
                  label.querySelector('b').textContent = name;
                  labels.appendChild(label);
                  view.lanes.set(name, { g, items: new Map(), edge: el('line', { class: 'edge', y1: -3, y2: LANE + 3 }, g),
                    lag: label.querySelector('.lag'), lagText: '' });
                });
                // The grid is relative to now: it stays put while the timeline slides under it.
                view.grid.textContent = '';
                const step = page.span <= 30000 ? 5000 : page.span <= 60000 ? 10000 : page.span <= 120000 ? 20000 : 60000;
                for (let ago = 0; ago <= page.span; ago += step) {
                  const at = page.width - ago * page.width / page.span;
                  el('line', { class: 'grid', x1: at, x2: at, y1: TOP - 4, y2: height - AXIS }, view.grid);
                  const tick = el('text', { class: 'tick', x: Math.max(at - 2, 0), y: height - 3,
                    'text-anchor': ago === 0 ? 'end' : ago === page.span ? 'start' : 'middle' }, view.grid);
                  tick.textContent = ago === 0 ? 'now' : '−' + ago / 1000 + ' s';
                }
                view.nowLine.setAttribute('x1', page.width - 1);
                view.nowLine.setAttribute('x2', page.width - 1);
                view.nowLine.setAttribute('y1', 0);
                view.nowLine.setAttribute('y2', height - AXIS);
                view.version = null;
                view.markersKey = null;
              }

              function drawEntries(view) {
                const target = view.data.targetDuration * 1000;
                let gaps = 0;
                const discontinuities = new Set();
                for (const rendition of view.data.renditions) {
                  const lane = view.lanes.get(rendition.name);
                  const keep = new Set();
                  for (const [msn, pdt, duration, flags] of rendition.entries) {
                    keep.add(msn);
                    if (!(flags & 4)) { if (flags & 1) gaps++; if (flags & 2) discontinuities.add(msn); }
                    let item = lane.items.get(msn);
                    if (!item) {
                      const rect = el('rect', { x: x(pdt), y: 0, width: Math.max(duration * page.width / page.span - 1, 1),
                        height: LANE, 'data-msn': msn }, lane.g);
                      el('title', {}, rect);
                      item = { rect, flags: -1, disc: null };
                      lane.items.set(msn, item);
                    }
                    if (item.flags !== flags) {
                      item.rect.setAttribute('class', 'entry ' + (flags & 1 ? 'gap' : 'seg') + (flags & 4 ? ' retained' : ''));
                      item.rect.firstChild.textContent = `MSN ${msn} · ${clock(pdt)} · ${(duration / 1000).toFixed(3)} s` +
                        (flags & 1 ? ' · GAP' : '') + (flags & 2 ? ' · after a discontinuity' : '') +
                        (flags & 4 ? ' · retained' : '');
                      if (flags & 2 && !item.disc) {
                        const at = x(pdt);
                        item.disc = el('line', { class: 'disc', x1: at, x2: at, y1: -4, y2: LANE + 4, 'data-msn': msn }, lane.g);
                      }
                      item.flags = flags;
                    }
                  }
                  for (const [msn, item] of lane.items) {
                    if (keep.has(msn)) continue;
                    item.rect.remove();
                    if (item.disc) item.disc.remove();
                    lane.items.delete(msn);
                  }
                  const listed = rendition.entries.filter((e) => !(e[3] & 4));
                  const last = listed[listed.length - 1];
                  const edge = last ? x(last[1] + last[2]) : -10;
                  lane.edge.setAttribute('x1', edge);
                  lane.edge.setAttribute('x2', edge);
                  lane.g.dataset.listed = listed.length;
                  lane.g.dataset.mediaSequence = rendition.mediaSequence ?? '';
                }
                const badges = [];
                if (gaps) badges.push(`<span class="badge bad">GAP ×${gaps}</span>`);
                if (discontinuities.size) badges.push(`<span class="badge disc">discontinuity ×${discontinuities.size}</span>`);
                if (view.data.markers.length) badges.push(`<span class="badge flagged">markers ×${view.data.markers.length}</span>`);
                // SRT callers (docs/srt.md): peer, RTT, bitrate, losses, per rendition; then what the segmenter
                // made of the caller's stream (srtStreams): segments, refusals, the keyframe warning.
                const streams = view.data.srtStreams || {};
                const srt = (view.data.srtCallers || []).map((c) => {
                  const s = streams[c.rendition];
                  return `SRT ${c.rendition} ← ${c.peer} RTT ${c.rttMilliseconds.toFixed(1)} ms ` +
                    `${(c.bitsPerSecond / 1e6).toFixed(2)} Mbit/s lost ${c.lostPackets} ` +
                    `retrans ${c.retransmittedPackets} dropped ${c.droppedPackets} buffer ${c.receiveBufferMilliseconds} ms` +
                    (s ? ` · cut ${s.segmentsAccepted} segments` + (s.segmentsRefused ? `, ${s.segmentsRefused} refused` : '') +
                      (s.segmenter.demuxer.continuityErrors ? `, CC errors ${s.segmenter.demuxer.continuityErrors}` : '') +
                      (s.segmenter.keyframeWarning ? ` · ⚠ ${s.segmenter.keyframeWarning}` : '') : '');
                });
                const head = badges.join(' ') + '|' + view.data.targetDuration + '|' + view.data.renditions.length +
                  '|' + srt.join('|');
                if (head !== view.head) {
                  view.head = head;
                  view.card.querySelector('.badges').innerHTML = badges.join(' ');
                  view.card.querySelector('.facts').textContent =
                    `TD ${view.data.targetDuration} s · ${view.data.renditions.length} rendition` +
                    (view.data.renditions.length === 1 ? '' : 's') + srt.map((line) => ' · ' + line).join('');
                }
                view.gaps = gaps;
                view.target = target;
              }

              function drawMarkers(view) {
                view.ranges.textContent = '';
                view.flags.textContent = '';
                view.labels = [];
                const height = TOP + view.lanes.size * (LANE + GAP);
                for (const marker of view.data.markers) {
                  const start = x(marker.start);
                  const end = marker.end !== null ? x(marker.end)
                    : marker.planned !== null ? x(marker.start + marker.planned) : x(marker.start + 10 * page.span);
                  el('rect', { class: 'range', x: start, y: TOP - 2, width: Math.max(end - start, 1), height: height - TOP },
                    view.ranges);
                  const flag = el('g', { class: 'marker', 'data-marker-id': marker.id,
                    'data-scte35': marker.scte35.join(' ') }, view.flags);
                  el('line', { class: 'pole', x1: start, x2: start, y1: 1, y2: height }, flag);
                  const text = `${marker.id} · ${kindText(marker.scte35)}`;
                  const width = text.length * 6 + 8;
                  const rect = el('rect', { class: 'flag', y: 1, width, height: 13, rx: 2 }, flag);
                  const label = el('text', { class: 'flag-label', y: 11 }, flag);
                  label.textContent = text;
                  view.labels.push({ rect, label, start, width, left: null });
                  el('title', {}, flag).textContent = `${marker.id}${marker.class ? ' (' + marker.class + ')' : ''}` +
                    ` from ${clock(marker.start)}` + (marker.end !== null ? ` to ${clock(marker.end)}` : ' (open)') +
                    ` · ${kindText(marker.scte35)}`;
                }
              }

              function draw(view) {
                layout(view);
                if (view.version !== view.data.version) {
                  drawEntries(view);
                  view.version = view.data.version;
                }
                const markersKey = JSON.stringify(view.data.markers);
                if (markersKey !== view.markersKey) {
                  drawMarkers(view);
                  view.markersKey = markersKey;
                }
                view.shift.setAttribute('transform', `translate(${page.width - x(page.now)},0)`);
                // A flag's label hangs right of its pole, or left of it while there is no room before now.
                for (const flag of view.labels) {
                  const left = flag.start + flag.width > x(page.now) ? flag.start - flag.width : flag.start;
                  if (left === flag.left) continue;
                  flag.rect.setAttribute('x', left);
                  flag.label.setAttribute('x', left + 4);
                  flag.left = left;
                }
                for (const rendition of view.data.renditions) {
                  const lane = view.lanes.get(rendition.name);
                  const lag = rendition.edgeLagMs;
                  const text = lag === null ? 'no entries' :
                    `edge ${seconds(lag)} · drift ${rendition.driftMs >= 0 ? '+' : ''}${seconds(rendition.driftMs)}`;
                  if (text !== lane.lagText) {
                    lane.lag.textContent = text;
                    lane.lagText = text;
                    lane.lag.className = 'lag' + (lag === null ? '' : lag > 3 * view.target ? ' bad' :
                      lag > 1.5 * view.target ? ' warn' : '');
                  }
                }
                page.stats.drawn++;
              }

              // The span that shows everything the origin holds: the smallest choice longer than the oldest entry's age.
              function fitSpan(data) {
                let oldest = data.now;
                for (const channel of data.channels) {
                  for (const rendition of channel.renditions) {
                    if (rendition.entries.length) oldest = Math.min(oldest, rendition.entries[0][1]);
                  }
                }
                const needed = (data.now - oldest) * 1.05;
                const span = [30000, 60000, 120000, 300000].find((choice) => choice >= needed) ?? 300000;
                if (span !== page.span) setSpan(span, data.now);
              }

              function setSpan(span, now) {
                page.span = span;
                page.base = now - span;
                for (const view of page.views.values()) view.laneKey = '';
              }

              function render(data) {
                if (page.autoSpan) fitSpan(data);
                page.now = data.now;
                if (page.base === null) page.base = data.now - page.span;
                $('clock').textContent = clock(data.now).slice(0, 8) + ' UTC';
                const seen = new Set();
                let previous = null;
                for (const channel of data.channels) {
                  seen.add(channel.name);
                  let view = page.views.get(channel.name);
                  if (!view) {
                    view = makeView(channel.name);
                    page.views.set(channel.name, view);
                    list.insertBefore(view.card, previous ? previous.card.nextSibling : list.firstChild);
                    observer.observe(view.card);
                    applyFilter(view);
                  }
                  view.data = channel;
                  previous = view;
                  if (view.visible || page.allVisible) draw(view);
                }
                for (const [name, view] of page.views) {
                  if (seen.has(name)) continue;
                  observer.unobserve(view.card);
                  view.card.remove();
                  page.views.delete(name);
                }
                const withGaps = [...page.views.values()].filter((v) => v.gaps).length;
                $('summary').textContent = `${data.channels.length} channels · ${withGaps} with GAPs in the window · ` +
                  `poll ${page.stats.fetchMs.toFixed(0)} ms (${(page.stats.bytes / 1024).toFixed(0)} KiB) · ` +
                  `update ${page.stats.renderMs.toFixed(1)} ms`;
                // The first channel with a few segments plays when the page opens (before that its playlist may 404).
                if (page.selected === null) {
                  const ready = data.channels.find((c) => c.renditions.some((r) => r.listed >= 3));
                  if (ready) select(ready.name);
                }
              }

              async function poll() {
                const started = performance.now();
                try {
                  const response = await fetch('/status/timeline.json', { cache: 'no-store', credentials: 'same-origin' });
                  const text = await response.text();
                  if (!response.ok) throw new Error(`timeline.json answered ${response.status}: ${text.slice(0, 200)}`);
                  const fetched = performance.now();
                  const data = JSON.parse(text);
                  const parsed = performance.now();
                  render(data);
                  const done = performance.now();
                  Object.assign(page.stats, { fetchMs: fetched - started, parseMs: parsed - fetched, renderMs: done - parsed,
                    bytes: text.length, channels: data.channels.length });
                  page.history.push({ fetchMs: fetched - started, parseMs: parsed - fetched, renderMs: done - parsed });
                  if (page.history.length > 30) page.history.shift();
                  page.polls++;
                  document.body.dataset.polls = page.polls;
                  $('error').hidden = true;
                } catch (error) {
                  $('error').textContent = String(error);
                  $('error').hidden = false;
                }
                setTimeout(poll, Math.max(1000 - (performance.now() - started), 200));
              }

              function select(name) {
                page.selected = name;
                for (const view of page.views.values()) view.card.classList.toggle('selected', view.name === name);
                const video = $('player'), note = $('player-note');
                const url = `/live/${encodeURIComponent(name)}/index.m3u8`;
                $('player-title').textContent = `player · ${name}`;
                if (video.canPlayType('application/vnd.apple.mpegurl')) {
                  video.hidden = false;
                  video.src = url;
                  video.play().catch(() => {});
                  note.className = '';
                  note.textContent = `native HLS · ${url}`;
                } else {
                  video.removeAttribute('src');
                  video.hidden = true;
                  note.className = 'warn';
                  note.textContent = `This browser does not play HLS natively, and the page loads no player library. ` +
                    `Open ${location.origin}${url} in Safari, VLC or ffplay.`;
                }
              }

              function applyFilter(view) {
                const text = $('filter').value.trim().toLowerCase();
                view.card.hidden = text !== '' && !view.name.toLowerCase().includes(text);
              }

              function resize() {
                const any = list.querySelector('svg.tl');
                const width = Math.floor(any ? any.getBoundingClientRect().width : list.clientWidth - 216);
                if (width > 0 && width !== page.width) {
                  page.width = width;
                  for (const view of page.views.values()) if (view.data && view.visible) draw(view);
                }
              }

              // Lays out and draws every channel from scratch; returns the milliseconds it took (for measurements).
              page.redrawAll = () => {
                const started = performance.now();
                for (const view of page.views.values()) {
                  if (!view.data) continue;
                  view.laneKey = '';
                  draw(view);
                }
                return performance.now() - started;
              };

              $('filter').addEventListener('input', () => { for (const view of page.views.values()) applyFilter(view); });
              $('span').addEventListener('change', (event) => {
                page.autoSpan = event.target.value === 'auto';
                if (!page.autoSpan) setSpan(Number(event.target.value) * 1000, page.now);
                for (const view of page.views.values()) if (view.data && view.visible) draw(view);
              });
              window.addEventListener('resize', resize);
              // The browser's player gives up on an error (a playlist not there yet, a channel gone): try again.
              $('player').addEventListener('error', () => {
                const name = page.selected;
                setTimeout(() => { if (page.selected === name) select(name); }, 2000);
              });
              page.width = Math.max(list.clientWidth - 216, 200);
              poll().then(resize);
            })();

            """#)
}
