// What the playground keeps and hands on: saved requests (named, in
// localStorage, exported and imported as a file), the recent requests
// (localStorage too, so that they survive a reload), a link to the
// request in the form, and the request written for curl, the rpc command
// line, the JavaScript and the Python clients.
import { $, app, copyText, el, parseParams } from "./playground-view.js";
import { fillText } from "./playground-methods.js";
import { hubURL, usesToken } from "./playground-connection.js";
import { formats, shareLink, readLink } from "./playground-snippets.js";

const savedKey = "switchboard-saved";
const recentKey = "switchboard-recent";
const maxRecent = 30;

// load reads a list from localStorage; nothing when storage is off or
// holds something else.
function load(key) {
  try {
    const v = JSON.parse(localStorage.getItem(key) ?? "[]");
    return Array.isArray(v) ? v.filter(isRequest) : [];
  } catch {
    return [];
  }
}

function store(key, list) {
  try {
    localStorage.setItem(key, JSON.stringify(list));
  } catch (err) {
    app.note(`Not kept: ${err.message}`);
  }
}

// A request as kept: {name?, method, params (as typed), notification?}
// or {name?, raw}.
const isRequest = (r) => r !== null && typeof r === "object" && (typeof r.raw === "string" || (typeof r.method === "string" && typeof (r.params ?? "") === "string"));

const describe = (r) => (r.raw !== undefined ? `raw ${r.raw.replace(/\s+/g, " ")}` : `${r.notification ? "notify " : ""}${r.method} ${r.params ?? ""}`.trim());

// open puts a kept request into the Request form.
function open(r) {
  if (r.raw !== undefined) {
    $("tab-raw").click();
    $("raw").value = r.raw;
    $("raw").focus();
    return;
  }
  fillText(r.method, r.params ?? "");
}

// ---- recent ----

let recent = load(recentKey);

function showRecent() {
  const list = $("recent");
  if (recent.length === 0) {
    list.replaceChildren(el("li", { class: "empty" }, "The requests you send are kept here, across reloads."));
    return;
  }
  list.replaceChildren(
    ...recent.map((r) =>
      el("li", { class: "entry" }, el("div", { class: "entry-head" }, el("button", { type: "button", class: "link recent-open", title: "Put it into the Request form", onclick: () => open(r) }, describe(r)))),
    ),
  );
}

app.onSend.push((r) => {
  const same = recent[0] && describe(recent[0]) === describe(r);
  if (!same) recent.unshift(r);
  recent = recent.slice(0, maxRecent);
  store(recentKey, recent);
  showRecent();
});

$("clear-recent").addEventListener("click", () => {
  recent = [];
  store(recentKey, recent);
  showRecent();
});

// ---- saved ----

let saved = load(savedKey).filter((r) => typeof r.name === "string");

// current is the request in the form: the tab shown decides which.
function current() {
  if (!$("pane-raw").hidden) return { raw: $("raw").value };
  return { method: $("method").value.trim(), params: $("params").value.trim() };
}

function showSaved() {
  const list = $("saved");
  if (saved.length === 0) {
    list.replaceChildren(el("li", { class: "empty hint" }, "Nothing saved yet."));
    return;
  }
  list.replaceChildren(
    ...saved.map((r) =>
      el(
        "li",
        { class: "chip", "data-name": r.name },
        el("button", { type: "button", class: "chip-open", title: describe(r), onclick: () => open(r) }, r.name),
        el("button", { type: "button", "aria-label": `delete ${r.name}`, title: "Delete", onclick: () => (save(saved.filter((x) => x !== r))) }, "×"),
      ),
    ),
  );
}

function save(list) {
  saved = list;
  store(savedKey, saved);
  showSaved();
}

$("save-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const name = $("save-name").value.trim();
  const r = current();
  if (!name || (r.raw === undefined && !r.method)) return;
  save([...saved.filter((x) => x.name !== name), { name, ...r }]);
  $("save-name").value = "";
});

// Export: a JSON file of the saved requests; import merges one, by name.
$("export-saved").addEventListener("click", () => {
  const text = JSON.stringify({ switchboard: "saved requests", saved }, null, 2) + "\n";
  const a = $("export-link");
  a.href = "data:application/json;charset=utf-8," + encodeURIComponent(text);
  a.click();
});
$("import-saved").addEventListener("change", async (e) => {
  const file = e.target.files?.[0];
  if (!file) return;
  try {
    const doc = JSON.parse(await file.text());
    const list = (Array.isArray(doc) ? doc : doc.saved ?? []).filter((r) => isRequest(r) && typeof r.name === "string");
    const names = new Set(list.map((r) => r.name));
    save([...saved.filter((r) => !names.has(r.name)), ...list]);
    $("library-result").textContent = `Imported ${list.length} request${list.length === 1 ? "" : "s"} from ${file.name}.`;
  } catch (err) {
    $("library-result").textContent = `Not imported: ${file.name} is not a file of saved requests (${err.message}).`;
  }
  e.target.value = "";
});

// ---- a link, and the request written for elsewhere ----

// show puts text into the box under the form, and copies it when asked.
function show(kind, text) {
  $("tool-out").hidden = false;
  $("tool-out").dataset.kind = kind;
  $("tool-text").textContent = text;
}

$("share").addEventListener("click", () => {
  const r = current();
  show("link", shareLink(location.href, r.raw !== undefined ? r : { method: r.method, params: r.params }));
  copyText("tool-text", "tool-copied");
});

function snippet() {
  const format = formats[$("copy-as").value];
  if (!format) return;
  const r = current();
  if (r.raw !== undefined || !r.method) {
    show("copy", "Copy as writes the Method tab's request: pick a method there.");
    return;
  }
  let params;
  try {
    params = r.params === "" ? undefined : parseParams(r.params);
  } catch (err) {
    show("copy", `The params are not valid JSON: ${err.message}`);
    return;
  }
  show($("copy-as").value, format({ hub: hubURL, method: r.method, params, token: usesToken() }));
}
$("copy-as").addEventListener("change", snippet);
for (const id of ["method", "params"]) $(id).addEventListener("input", () => !$("tool-out").hidden && $("tool-out").dataset.kind !== "link" && snippet());

$("tool-copy").addEventListener("click", () => copyText("tool-text", "tool-copied"));

// ---- start: a link's request, then what is kept ----

const linked = readLink(location.hash);
if (linked) {
  open(linked);
  $("library-result").textContent = "The request from the link is in the form: send it when you are ready.";
}
showRecent();
showSaved();
