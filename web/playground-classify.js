// How the frame log names a message: its kind, a one-line summary, and
// the ids in it. No page needed: Node tests it.
import { isRaw } from "./playground-view.js";

// idKey is an id as a map key: a number as written, even beyond 2^53.
export const idKey = (id) => (typeof id === "string" ? "s" + id : "n" + (isRaw(id) ? id.rawJSON : String(id)));

// classify names a frame: its kind, a one-line summary, and the ids in it.
export function classify(value, ok) {
  if (!ok) return { kind: "invalid", label: "not JSON", summary: "", ids: [] };
  if (Array.isArray(value)) {
    const parts = value.map((v) => classify(v, true));
    const ids = parts.flatMap((p) => p.ids);
    const calls = parts.flatMap((p) => p.calls ?? []);
    const counts = {};
    for (const p of parts) counts[p.label] = (counts[p.label] ?? 0) + 1;
    return {
      kind: parts.some((p) => p.kind === "error") ? "error" : "batch",
      label: `batch of ${value.length}`,
      summary: Object.entries(counts).map(([k, n]) => (n > 1 ? `${n} × ${k}` : k)).join(", "),
      ids,
      calls,
      requests: parts.some((p) => p.requests),
      responses: parts.some((p) => p.responses),
    };
  }
  if (value === null || typeof value !== "object") return { kind: "invalid", label: "not a request", summary: "", ids: [] };
  const id = "id" in value ? ` #${JSON.stringify(value.id)}` : "";
  if (typeof value.method === "string") {
    const p = value.params;
    if (value.method === "rpc.event") return { kind: "event", label: "event", summary: p?.topic ?? "", ids: [] };
    if (value.method === "rpc.progress") return { kind: "note", label: "progress", summary: `for #${JSON.stringify(p?.id)}`, ids: [] };
    if (value.method === "rpc.cancel") return { kind: "note", label: "cancel", summary: `of #${JSON.stringify(p?.id)}`, ids: [] };
    if (!("id" in value)) return { kind: "notification", label: "notification", summary: value.method, ids: [] };
    const k = idKey(value.id);
    return { kind: "call", label: "call", summary: value.method + id, ids: [k], calls: [[k, value.method]], requests: true, ping: value.method === "rpc.ping" };
  }
  if ("error" in value) return { kind: "error", label: "error", summary: `${value.error?.code ?? ""} ${value.error?.message ?? ""}${id}`, ids: [idKey(value.id)], responses: true };
  if ("result" in value) return { kind: "result", label: "result", summary: id.trim(), ids: [idKey(value.id)], responses: true };
  return { kind: "invalid", label: "not a request", summary: "", ids: [] };
}
