"use strict";
// diagrama's read-only view: diagrams as SVG, their runs, and a run form. No framework, no CDN.
const COLORS = { Start: "#ddf4ff", Set: "#f6f8fa", Loop: "#fbefff", ClaudeRequest: "#fff1e5", GroqChatRequest: "#fff8c5",
  GeminiRequest: "#dafbe1", ToolDispatch: "#ffebe9" };
const ICONS = { Start: "▶", Set: "≔", Loop: "↻", ClaudeRequest: "✦", GroqChatRequest: "⚡", GeminiRequest: "◆", ToolDispatch: "⚙" };
const W = 180, H = 54;
const main = document.getElementById("main");
const crumbs = document.getElementById("crumbs");
let timer = null;

const api = async (url, options) => { const r = await fetch(url, options); if (!r.ok) throw new Error(`${r.status} ${url}`); return r.json(); };
const el = (tag, attrs = {}, ...children) => {
  const svg = ["svg", "g", "rect", "text", "path", "defs", "marker", "title"].includes(tag);
  const node = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) { if (v !== undefined && v !== null) node.setAttribute(k, v); }
  for (const child of children.flat()) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
};
const show = (value) => typeof value === "string" ? value : JSON.stringify(value, null, 2);
const esc = encodeURIComponent;

async function route() {
  if (timer) { clearTimeout(timer); timer = null; }
  const hash = decodeURIComponent(location.hash.slice(1) || "/");
  main.replaceChildren(); crumbs.replaceChildren();
  try {
    if (hash.startsWith("/d/")) return await diagramPage(hash.slice(3));
    if (hash.startsWith("/run/")) return await runPage(hash.slice(5));
    return await listPage();
  } catch (error) { main.append(el("div", { class: "card problem" }, String(error))); }
}

async function listPage() {
  const diagrams = await api("/api/diagrams");
  const list = el("ul", { class: "plain", id: "diagram-list" });
  for (const d of diagrams) {
    list.append(el("li", {}, el("a", { href: `#/d/${esc(d.path)}` }, d.name), " ",
      el("span", { class: "muted" }, `${d.path} · ${d.blocks} blocks`), d.valid ? "" : el("span", { class: "problem" }, " · invalid"),
      el("div", { class: "muted" }, d.description || "")));
  }
  main.append(el("div", { class: "card" }, el("h2", {}, "Diagrams"), list));
}

function drawDiagram(view, run) {
  const xs = view.blocks.map(b => b.x), ys = view.blocks.map(b => b.y);
  const minX = Math.min(...xs) - 40, minY = Math.min(...ys) - 40;
  const width = Math.max(...xs) - minX + W + 60, height = Math.max(...ys) - minY + H + 60;
  const svg = el("svg", { class: "diagram", viewBox: `${minX} ${minY} ${width} ${height}`, id: "diagram" });
  svg.append(el("defs", {}, ["plain", "taken"].map(kind => el("marker", { id: `arrow-${kind}`, viewBox: "0 0 10 10", refX: 9, refY: 5,
    markerWidth: 10, markerHeight: 10, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, el("path", { d: "M0,0 L10,5 L0,10 z", fill: kind === "taken" ? "#1a7f37" : "#8c959f" })))));
  const at = Object.fromEntries(view.blocks.map(b => [b.id, b]));
  for (const body of view.bodies) {
    const members = [body.loop, ...body.members].map(id => at[id]).filter(Boolean);
    const x0 = Math.min(...members.map(b => b.x)) - 16, y0 = Math.min(...members.map(b => b.y)) - 16;
    const x1 = Math.max(...members.map(b => b.x)) + W + 16, y1 = Math.max(...members.map(b => b.y)) + H + 16;
    svg.append(el("rect", { class: "loop-group", x: x0, y: y0, width: x1 - x0, height: y1 - y0, "data-loop": body.loop }));
  }
  const taken = new Set((run ? run.links : []).map(([a, b]) => `${a}>${b}`));
  for (const link of view.links) {
    const a = at[link.source], b = at[link.target];
    if (!a || !b) continue;
    const isTaken = taken.has(`${link.source}>${link.target}`);
    const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y;
    const d = y2 > y1 ? `M${x1},${y1} C${x1},${(y1 + y2) / 2} ${x2},${(y1 + y2) / 2} ${x2},${y2}`
      : `M${a.x + W},${a.y + H / 2} C${a.x + W + 90},${a.y + H / 2} ${b.x + W + 90},${b.y + H / 2} ${b.x + W},${b.y + H / 2}`;
    const classes = ["edge", link.kind, isTaken ? "taken" : ""].join(" ");
    svg.append(el("path", { d, class: classes, "data-source": link.source, "data-target": link.target, "data-kind": link.kind,
      "marker-end": `url(#arrow-${isTaken ? "taken" : "plain"})` }));
    const label = link.kind === "error" ? "on_error" : link.kind === "body" ? "body" : (link.when || "").replace(/[{}]/g, "").trim();
    if (label) svg.append(el("text", { class: "edge-label", x: (x1 + x2) / 2 + 6, y: (y1 + y2) / 2 }, label.slice(0, 40)));
  }
  for (const block of view.blocks) {
    const classes = ["node"];
    if (block.problems.length) classes.push("has-problem");
    if (run && run.blocks.includes(block.id)) classes.push("visited");
    if (run && run.failed === block.id) classes.push("failed");
    const passes = run && run.passes[block.id] ? ` · ${run.passes[block.id]} passes` : "";
    const g = el("g", { class: classes.join(" "), "data-block": block.id, transform: `translate(${block.x},${block.y})` },
      el("title", {}, `${block.id} (${block.type})`),
      el("rect", { width: W, height: H, fill: COLORS[block.type] || "#fff" }),
      el("text", { x: 10, y: 22 }, `${ICONS[block.type] || "□"} ${(block.label || block.id).slice(0, 22)}`),
      el("text", { x: 10, y: 40, class: "type" }, `${block.type}${passes}`),
      block.problems.length ? el("text", { x: W - 18, y: 20, class: "badge" }, "!") : "");
    svg.append(g);
  }
  return svg;
}

function blockPanel(block, run) {
  const rows = [["type", block.type], ["error level", `${block.levels.error_level.value} (${block.levels.error_level.inherited ? "inherited from " : "set on "}${block.levels.error_level.from})`],
    ["message level", `${block.levels.message_level.value} (${block.levels.message_level.inherited ? "inherited from " : "set on "}${block.levels.message_level.from})`]];
  const card = el("div", { class: "card", id: "block-panel" }, el("h3", {}, block.label || block.id),
    el("table", {}, rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v)))));
  if (block.problems.length) card.append(el("h3", { class: "problem" }, "Problems"), el("ul", {}, block.problems.map(p => el("li", { class: "problem" }, p))));
  for (const [title, value] of [["Inputs (with)", block.with], ["set", block.set], ["Settings", block.settings]]) {
    if (value && Object.keys(value).length) card.append(el("h3", {}, title), el("pre", {}, show(value)));
  }
  if (run) {
    for (const step of run.steps.filter(s => s.block === block.id)) {
      const facts = [`step ${step.number}`, step.status, step.duration_ms != null ? `${step.duration_ms} ms` : null,
        step.model ? `${step.model} ${step.tokens ? step.tokens.join("/") + " tokens" : ""}` : null,
        step.called_tools.length ? `called ${step.called_tools.join(", ")}` : null, step.next ? `→ ${step.next}` : null].filter(Boolean);
      card.append(el("div", { class: "step" }, el("h3", {}, facts.join(" · ")),
        step.error ? el("div", { class: "problem" }, step.error) : "",
        Object.keys(step.inputs).length ? el("pre", {}, "inputs " + show(step.inputs)) : "",
        Object.keys(step.outputs).length ? el("pre", {}, "outputs " + show(step.outputs)) : ""));
    }
  }
  return card;
}

function runForm(view) {
  const form = el("form", { id: "run-form" }, el("h3", {}, "Run"));
  for (const [name, value] of Object.entries(view.inputs)) {
    form.append(el("label", { for: `input-${name}` }, name));
    if (typeof value === "boolean") form.append(el("input", { type: "checkbox", id: `input-${name}`, name, ...(value ? { checked: "" } : {}) }));
    else if (typeof value === "number") form.append(el("input", { type: "number", step: "any", id: `input-${name}`, name, value }));
    else if (typeof value === "object" && value !== null) form.append(el("textarea", { id: `input-${name}`, name, rows: 3 }, JSON.stringify(value)));
    else form.append(el("input", { type: "text", id: `input-${name}`, name, value: value ?? "" }));
  }
  form.append(el("label", {}, el("input", { type: "checkbox", id: "offline", checked: "" }), " offline (simulated vendors)"));
  form.append(el("button", { type: "submit", id: "run-button" }, "Run"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const inputs = {};
    for (const [name, value] of Object.entries(view.inputs)) {
      const field = form.querySelector(`[name="${name}"]`);
      inputs[name] = typeof value === "boolean" ? field.checked : typeof value === "number" ? Number(field.value)
        : (typeof value === "object" && value !== null) ? JSON.parse(field.value) : field.value;
    }
    const started = await api(`/api/diagrams/${view.path}/runs`, { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ inputs, offline: form.querySelector("#offline").checked }) });
    location.hash = `#/run/${started.run_id}`;
  });
  return form;
}

async function diagramPage(path, run) {
  const view = await api(`/api/diagrams/${path}`);
  crumbs.append(el("a", { href: `#/d/${esc(view.path)}` }, view.name));
  const side = el("div", {});
  const svg = drawDiagram(view, run);
  const select = (id) => {
    svg.querySelectorAll(".node").forEach(n => n.classList.toggle("selected", n.dataset.block === id));
    side.querySelector("#block-panel")?.remove();
    side.prepend(blockPanel(view.blocks.find(b => b.id === id), run));
  };
  svg.querySelectorAll(".node").forEach(n => n.addEventListener("click", () => select(n.dataset.block)));
  const left = el("div", {}, el("div", { class: "card" }, el("h2", {}, view.name), el("div", { class: "muted" }, view.description)));
  if (view.problems.length) left.append(el("div", { class: "card problem" }, view.problems.map(p => el("div", {}, p))));
  left.append(svg);
  if (run) {
    side.append(el("div", { class: "card", id: "run-summary" }, el("h3", {}, "Run ", el("span", { class: `status ${run.status}`, id: "run-status" }, run.status)),
      el("div", { class: "muted" }, run.run_id), run.errors.map(e => el("div", { class: "problem" }, `${e.block}: ${e.type}: ${e.message}`))));
  } else {
    side.append(el("div", { class: "card" }, runForm(view)));
    const runs = await api(`/api/diagrams/${path}/runs`);
    side.append(el("div", { class: "card" }, el("h3", {}, "Runs"), el("ul", { class: "plain", id: "run-list" },
      runs.map(r => el("li", {}, el("a", { href: `#/run/${r.run_id}` }, r.run_id), " ", el("span", { class: `status ${r.status}` }, r.status))))));
  }
  main.append(el("div", { class: "layout" }, left, side));
}

async function runPage(runId) {
  const run = await api(`/api/runs/${runId}`);
  main.replaceChildren(); crumbs.replaceChildren();
  if (run.diagram) await diagramPage(run.diagram, run);
  crumbs.append(" / ", el("a", { href: `#/run/${runId}` }, runId));
  if (run.status === "running") timer = setTimeout(() => runPage(runId), 400);
}

window.addEventListener("hashchange", route);
route();
