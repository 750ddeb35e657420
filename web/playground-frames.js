// The frame log: every message on the WebSocket, both ways, named and
// timed, through the client's trace option.
import { $, el, jsonView, prettyText, clock, ms } from "./playground-view.js";
import { classify } from "./playground-classify.js";

export { classify };

export const frames = {
  list: $("frames"),
  asked: { send: new Map(), receive: new Map() }, // id key -> when a request went that way
  hiddenPings: new Set(), // ids of rpc.ping calls, whose answers hide with them
  max: 400,
  observers: [], // fn(direction, value, ok, info) for each frame

  counts: { frames: 0, pings: 0 }, // since the last Clear
  log: [], // {time, direction, text, ok}: what Export writes
  maxLog: 5000,
  texts: new WeakMap(), // li -> the frame's text, lower case, for the filter

  // visible tells whether the filter and the pings box let li show.
  visible(li, text) {
    if (text !== undefined) this.texts.set(li, text.toLowerCase());
    if (li.dataset.ping && !$("show-pings").checked) return false;
    const dir = $("frame-dir").value;
    if (dir && li.dataset.dir !== dir) return false;
    const kind = $("frame-kind").value;
    if (kind && !li.classList.contains(`k-${kind}`)) return false;
    const q = $("frame-filter").value.trim().toLowerCase();
    return !q || (this.texts.get(li) ?? "").includes(q);
  },

  // filter applies the filter to every frame shown, and says how many match.
  filter() {
    let n = 0;
    for (const li of this.list.querySelectorAll(".frame")) {
      li.hidden = !this.visible(li);
      if (!li.hidden) n++;
    }
    const on = $("frame-dir").value || $("frame-kind").value || $("frame-filter").value.trim();
    $("frame-matches").textContent = on ? `${n} match${n === 1 ? "" : "es"}` : "";
  },
  progress: undefined, // {key, li, n}: the last frame, when it was progress

  add(direction, text) {
    const now = performance.now();
    const { value, ok } = prettyText(text);
    const info = classify(value, ok);
    // Progress of the same call, one report after another, folds into one
    // frame that counts them and shows the latest.
    if (info.kind === "note" && info.label === "progress") {
      const key = direction + info.summary;
      const last = this.progress;
      if (last && last.key === key && last.li.isConnected) {
        last.n++;
        last.li.querySelector(".times").textContent = `× ${last.n}`;
        last.li.querySelector(".time").textContent = clock();
        last.li.querySelector("pre").replaceWith(jsonView(value));
        last.li.hidden = !this.visible(last.li, text);
        this.log.push({ time: new Date().toISOString(), direction, text, ok });
        this.count(false);
        for (const fn of this.observers) fn(direction, value, ok, info);
        return;
      }
    }
    const isPing = info.ping || (info.ids.length > 0 && info.ids.every((k) => this.hiddenPings.has(k)) && direction === "receive");
    if (info.requests) for (const [k, method] of info.calls) this.asked[direction].set(k, { now, method });
    if (info.ping && direction === "send") for (const k of info.ids) this.hiddenPings.add(k);
    // A response's latency: since the request it answers went the other way.
    let latency;
    if (info.responses) {
      const asked = this.asked[direction === "send" ? "receive" : "send"];
      const reqs = info.ids.map((k) => asked.get(k)).filter((r) => r !== undefined);
      if (reqs.length > 0) {
        latency = now - Math.min(...reqs.map((r) => r.now));
        if (!Array.isArray(value)) info.summary += ` ← ${reqs[0].method}`;
      }
      for (const k of info.ids) asked.delete(k), this.hiddenPings.delete(k);
    }
    const li = el(
      "li",
      { class: `frame ${direction} k-${info.kind}`, "data-ping": isPing ? "1" : undefined, "data-dir": direction },
      el(
        "div",
        { class: "frame-head" },
        el("span", { class: "dir", title: direction === "send" ? "sent by this page" : "received from the hub" }, direction === "send" ? "↑" : "↓"),
        el("span", { class: "kind" }, info.label),
        el("span", { class: "summary" }, info.summary),
        info.label === "progress" && el("span", { class: "times", title: "progress reports in a row" }),
        el("span", { class: "time" }, clock()),
        latency !== undefined && el("span", { class: "lat", title: direction === "send" ? "time this page took to answer" : "time the hub took to answer" }, "+" + ms(latency)),
      ),
      ok ? jsonView(value) : el("pre", { class: "json j-bad" }, text),
    );
    li.hidden = !this.visible(li, text);
    this.log.push({ time: new Date().toISOString(), direction, text, ok });
    if (this.log.length > this.maxLog) this.log.splice(0, this.log.length - this.maxLog);
    const atBottom = this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 40;
    this.list.querySelector(".empty")?.remove();
    this.list.append(li);
    while (this.list.children.length > this.max) this.list.firstElementChild.remove();
    // Hidden pings between two reports do not part them.
    if (info.label === "progress") this.progress = { key: direction + info.summary, li, n: 1 };
    else if (!isPing) this.progress = undefined;
    this.count(isPing);
    if (atBottom) this.list.scrollTop = this.list.scrollHeight;
    for (const fn of this.observers) fn(direction, value, ok, info);
  },

  // count counts a frame, and shows the count of those the log shows:
  // hidden pings are not.
  count(ping) {
    if (ping) this.counts.pings++;
    else this.counts.frames++;
    this.showCount();
  },
  showCount() {
    const pings = $("show-pings").checked;
    const n = this.counts.frames + (pings ? this.counts.pings : 0);
    $("frame-count").textContent = n === 0 && this.counts.pings === 0 ? "" : String(n);
    $("frame-count").title = pings ? "frames, pings included" : `frames, not counting ${this.counts.pings} hidden ping${this.counts.pings === 1 ? "" : "s"}`;
  },
};

$("show-pings").addEventListener("change", () => {
  frames.filter();
  frames.showCount();
});
for (const id of ["frame-dir", "frame-kind"]) $(id).addEventListener("change", () => frames.filter());
$("frame-filter").addEventListener("input", () => frames.filter());

// Export writes the frames since the last Clear as JSON lines: each with
// its time, direction, and the message itself (as a string when it was
// not JSON).
$("export-frames").addEventListener("click", () => {
  const lines = frames.log.map((f) => `{"time":${JSON.stringify(f.time)},"direction":${JSON.stringify(f.direction)},${f.ok ? `"message":${f.text.replace(/[\r\n]+/g, " ")}` : `"text":${JSON.stringify(f.text)}`}}`);
  const a = $("export-frames-link");
  a.href = "data:application/jsonl;charset=utf-8," + encodeURIComponent(lines.join("\n") + (lines.length ? "\n" : ""));
  a.click();
});
$("clear-frames").addEventListener("click", () => {
  frames.list.replaceChildren(el("li", { class: "empty" }, "Cleared."));
  frames.counts = { frames: 0, pings: 0 };
  frames.log = [];
  frames.progress = undefined;
  frames.showCount();
});
