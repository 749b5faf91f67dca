/**
 * Automatic layered layout with ELK (the graph: model/elkGraph), in a Web Worker where the page has them.
 */
import type { ElkExtendedEdge, ElkNode, ElkPoint } from 'elkjs/lib/elk-api';
import ElkApi from 'elkjs/lib/elk-api.js';
import workerUrl from 'elkjs/lib/elk-worker.min.js?url';
import { api } from '../api/client';
import type { Diagram } from '../api/types';
import { buildLayoutGraph, CHAIN_GAP } from './elkGraph';
import { NEXT, type LinkKeys } from './format';
import { edgeId } from './graph';
import { NODE_HEIGHT, NODE_WIDTH } from './sizes';

export { buildElkGraph, CHAIN_RUN, chainRuns, IN_PORT, LARGE_DIAGRAM, rootOptions, WRAP_ASPECT_RATIO, WRAP_DIAGRAM } from './elkGraph';

export interface LayoutResult {
  nodes: Record<string, { x: number; y: number }>;
  edges: Record<string, { points: ElkPoint[]; label?: { x: number; y: number; width: number; height: number } }>;
}

type ElkLike = { layout: (graph: ElkNode) => Promise<ElkNode> };
let elkPromise: Promise<ElkLike> | null = null;

/**
 * ELK, in a Web Worker where the page has workers (its 1.6 MB script is loaded, compiled and run off the main
 * thread, so the page keeps drawing while a large diagram is laid out), else (tests, no Worker) in-process.
 * In the built page, index.html has already started the worker (so its script loads in parallel with the
 * page's first requests and the app's own script); `preloadLayout()` starts it otherwise.
 */
function elk(): Promise<ElkLike> {
  elkPromise ??= startElk();
  return elkPromise;
}

async function startElk(): Promise<ElkLike> {
  if (typeof Worker !== 'undefined' && typeof window !== 'undefined') {
    try {
      // the worker index.html already started, else a new one
      const started = window.__diagramaEarly?.elkWorker;
      if (started) delete window.__diagramaEarly!.elkWorker;
      const worker = new ElkApi({ workerUrl, workerFactory: started ? () => started : undefined, algorithms: ['layered'] });
      return worker as unknown as ElkLike;
    } catch {
      // fall through to the in-process ELK
    }
  }
  const m = await import('elkjs/lib/elk.bundled.js');
  return new m.default({ algorithms: ['layered'] }) as unknown as ElkLike;
}

/** Starts loading ELK (and its worker) without waiting for it. */
export function preloadLayout(): void {
  void elk().catch(() => undefined);
}

/** The latest layout asked for: the same graph asked again (e.g. by the store when the diagram arrives, then
 * by the canvas once it renders) shares its answer instead of running ELK twice. */
let latest: { key: string; result: Promise<LayoutResult> } | null = null;

/** Positions for every block (top-left corners) and ELK's routes for the links. */
export function layoutDiagram(
  diagram: Diagram,
  bodies: Array<{ loop: string; members: string[] }>,
  keys: LinkKeys,
): Promise<LayoutResult> {
  const { graph, runs } = buildLayoutGraph(diagram, bodies, keys);
  const key = JSON.stringify(graph);
  if (latest?.key === key) return latest.result;
  const result = storedLayout(key).then((stored) => stored ?? runLayout(diagram, graph, runs, keys).then((made) => {
    store(key, made);
    return made;
  }));
  latest = { key, result };
  result.catch(() => {
    if (latest?.result === result) latest = null;
  });
  return result;
}

/** The SHA-256 of a layout graph, hex: the key the server keeps its layout under. */
async function graphKey(graph: string): Promise<string | null> {
  if (typeof crypto === 'undefined' || !crypto.subtle || typeof window === 'undefined' || !window.location?.host) return null;
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(graph));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The layout an earlier page made of this very graph, which the server kept (engine/web/layouts.py): a reload or
 * another tab draws a large diagram without running ELK again, whose first layout in a fresh page is the slow
 * part of opening it. Null when there is none (or no server to ask).
 */
async function storedLayout(graph: string): Promise<LayoutResult | null> {
  try {
    const key = await graphKey(graph);
    if (!key) return null;
    const { layout } = await api.layout(key);
    return layout as unknown as LayoutResult;
  } catch {
    return null;
  }
}

function store(graph: string, layout: LayoutResult): void {
  void graphKey(graph).then((key) => (key ? api.storeLayout(key, layout) : undefined)).catch(() => undefined);
}

async function runLayout(diagram: Diagram, graph: ElkNode, runs: Map<string, string[]>, keys: LinkKeys): Promise<LayoutResult> {
  const engine = await elk();
  const began = performance.now();
  const out = await engine.layout(graph);
  measure('studio:elk-layout', began);
  const result: LayoutResult = { nodes: {}, edges: {} };
  const blockIds = new Set(diagram.blocks.map((b) => b.id));
  const placed: Array<{ id: string; x: number; y: number; width: number }> = [];
  const walk = (n: ElkNode) => {
    for (const c of n.children ?? []) {
      if (blockIds.has(c.id) || runs.has(c.id)) placed.push({ id: c.id, x: c.x ?? 0, y: c.y ?? 0, width: c.width ?? NODE_WIDTH });
      walk(c);
    }
  };
  walk(out);
  const collect = (n: ElkNode) => {
    for (const e of (n.edges ?? []) as ElkExtendedEdge[]) {
      const s = e.sections?.[0];
      if (!s) continue;
      const l = e.labels?.[0];
      result.edges[e.id] = {
        points: [s.startPoint, ...(s.bendPoints ?? []), s.endPoint].map((p) => ({ x: p.x, y: p.y })),
        label: l && l.x !== undefined && l.y !== undefined
          ? { x: l.x, y: l.y, width: l.width ?? 0, height: l.height ?? 0 } : undefined,
      };
    }
    for (const c of n.children ?? []) collect(c);
  };
  collect(out);
  const widen = runs.size ? widenRuns(placed, runs, result.edges) : () => 0;
  for (const n of placed) {
    const x = Math.round(n.x + widen(n.x, n.y));
    const y = Math.round(n.y);
    const run = runs.get(n.id);
    if (run) placeRun(result, run, x, y);
    else result.nodes[n.id] = { x, y };
  }
  const elkEdges = allEdges(out);
  dropBrokenRoutes(result, elkEdges);
  const unrouted = elkEdges.filter((e) => !result.edges[e.id]);
  if (unrouted.length) routeAround(result, unrouted, keys);
  return result;
}

/**
 * Forgets the routes ELK got wrong (seen with wrapping: a link across rows as one slanted segment ending far from
 * its target): a route must be orthogonal and start and end at its blocks. routeAround routes them instead.
 */
function dropBrokenRoutes(result: LayoutResult, edges: ElkExtendedEdge[]): void {
  const near = (p: ElkPoint, block: string) => {
    const n = result.nodes[block];
    return !!n && p.x >= n.x - 30 && p.x <= n.x + NODE_WIDTH + 30 && p.y >= n.y - 30 && p.y <= n.y + NODE_HEIGHT + 30;
  };
  for (const e of edges) {
    const route = result.edges[e.id];
    if (!route) continue;
    const { points } = route;
    const orthogonal = points.every((p, i) => i === 0 || Math.abs(p.x - points[i - 1].x) < 0.5 || Math.abs(p.y - points[i - 1].y) < 0.5);
    if (!orthogonal || !near(points[0], portOf(e.sources[0])[0]) || !near(points[points.length - 1], portOf(e.targets[0])[0])) {
      delete result.edges[e.id];
    }
  }
}

const CHAIN_STEP = NODE_WIDTH + CHAIN_GAP;

/**
 * ELK placed each run of blocks as one block-sized node (so that its wrapped rows keep even columns); this makes
 * room for the runs: in each row, everything right of a column that holds a run moves right by the run's extra
 * length (the most of that column's runs), links and labels with it. Returns the shift of a point (x, y);
 * `edges` are moved in place.
 */
function widenRuns(
  placed: Array<{ id: string; x: number; y: number; width: number }>,
  runs: Map<string, string[]>,
  edges: LayoutResult['edges'],
): (x: number, y: number) => number {
  const rows = wrappedRows(placed, edges);
  // a row's columns: the x extents of its nodes, merged where they overlap, each with its extra length
  const columns = rows.map(() => [] as Array<{ left: number; right: number; extra: number }>);
  const rowAt = (y: number) => {
    let i = 0;
    while (i + 1 < rows.length && rows[i + 1][0] <= y) i++;
    return i;
  };
  for (const n of [...placed].sort((a, b) => a.x - b.x)) {
    const cols = columns[rowAt(n.y)];
    const extra = ((runs.get(n.id)?.length ?? 1) - 1) * CHAIN_STEP;
    const last = cols[cols.length - 1];
    if (last && n.x < last.right) {
      last.right = Math.max(last.right, n.x + n.width);
      last.extra = Math.max(last.extra, extra);
    } else cols.push({ left: n.x, right: n.x + n.width, extra });
  }
  const shift = (x: number, y: number) => {
    let moved = 0;
    for (const c of columns[rowAt(y)]) {
      if (x >= c.right) moved += c.extra;
      else if (x > c.left) moved += (c.extra * (x - c.left)) / (c.right - c.left);
      else break;
    }
    return moved;
  };
  const inRow = (y: number) => rows.some(([top, bottom]) => y >= top && y <= bottom);
  for (const e of Object.values(edges)) {
    const before = e.points.map((p) => ({ ...p }));
    const moved = e.points.map((p) => shift(p.x, p.y));
    // a vertical part between a row and the gap below or above it moves with the row (points in the gaps have
    // no blocks near them), so that the link stays orthogonal
    for (let i = 1; i < before.length; i++) {
      if (Math.abs(before[i].x - before[i - 1].x) > 0.5 || moved[i] === moved[i - 1]) continue;
      const keep = inRow(before[i - 1].y) && !inRow(before[i].y) ? i - 1 : i;
      moved[i] = moved[i - 1] = moved[keep];
    }
    e.points.forEach((p, i) => { p.x += moved[i]; });
    if (e.label) {
      // the label moves with the part of the link it sits on
      const l = e.label;
      const cx = l.x + l.width / 2;
      const cy = l.y + l.height / 2;
      const on = before.findIndex((a, i) => {
        const b = before[i + 1];
        return !!b && Math.abs(a.y - b.y) < 0.5 && Math.abs(a.y - cy) <= l.height && cx >= Math.min(a.x, b.x) && cx <= Math.max(a.x, b.x);
      });
      if (on >= 0) {
        const [a, b] = [before[on], before[on + 1]];
        const f = b.x === a.x ? 0 : (cx - a.x) / (b.x - a.x);
        l.x += moved[on] + f * (moved[on + 1] - moved[on]);
      } else l.x += shift(l.x, l.y);
    }
  }
  return shift;
}

/**
 * The rows of a layout ELK wrapped, top to bottom: the vertical extents of its blocks, merged, except where a
 * link that carries the flow from the end of a row back to the start of the next one passes between them.
 */
function wrappedRows(placed: Array<{ x: number; y: number; width: number }>, edges: LayoutResult['edges']): number[][] {
  const left = Math.min(...placed.map((n) => n.x));
  const right = Math.max(...placed.map((n) => n.x + n.width));
  const returns = Object.values(edges).flatMap((e) => e.points.slice(1)
    .filter((p, i) => p.y === e.points[i].y && e.points[i].x - p.x > (right - left) / 2).map((p) => p.y));
  const rows: number[][] = [];
  for (const band of bands(placed.map((n) => [n.y, n.y + NODE_HEIGHT]))) {
    const last = rows[rows.length - 1];
    if (last && !returns.some((y) => y > last[1] && y < band[0])) last[1] = band[1];
    else rows.push(band);
  }
  return rows;
}

/** Vertical extents merged where they overlap, top to bottom. */
function bands(spans: number[][]): number[][] {
  const rows: number[][] = [];
  for (const [top, bottom] of [...spans].sort((a, b) => a[0] - b[0])) {
    const last = rows[rows.length - 1];
    if (last && top <= last[1]) last[1] = Math.max(last[1], bottom);
    else rows.push([top, bottom]);
  }
  return rows;
}

/** The blocks of a run, in a row from the corner ELK gave its node (moved), and the links between them. */
function placeRun(result: LayoutResult, run: string[], x: number, y: number): void {
  run.forEach((id, i) => {
    result.nodes[id] = { x: x + i * CHAIN_STEP, y };
    if (i > 0) {
      const middle = y + NODE_HEIGHT / 2;
      result.edges[edgeId(NEXT, run[i - 1], 0)] = {
        points: [{ x: x + (i - 1) * CHAIN_STEP + NODE_WIDTH + 8, y: middle }, { x: x + i * CHAIN_STEP - 8, y: middle }],
      };
    }
  });
}

function allEdges(n: ElkNode): ElkExtendedEdge[] {
  return [...((n.edges ?? []) as ElkExtendedEdge[]), ...(n.children ?? []).flatMap(allEdges)];
}

/** `block__port` → [block, port] */
function portOf(id: string | undefined): [string, string] {
  const at = (id ?? '').lastIndexOf('__');
  return at < 0 ? [id ?? '', ''] : [id!.slice(0, at), id!.slice(at + 2)];
}

/**
 * Routes for the links ELK leaves without one (in a wrapped layout, a back link from one row to another), around
 * the blocks: out of the source into the gap below its row, right past the whole diagram, into the gap above
 * the target's row, and into the target from its left; the label beside the part past the diagram, where
 * nothing else is.
 */
export function routeAround(result: LayoutResult, edges: ElkExtendedEdge[], keys: Pick<LinkKeys, 'next' | 'error'>): void {
  const placed = Object.values(result.nodes);
  if (!placed.length) return;
  // rows: the vertical extents of blocks and labels, merged where they overlap
  const rows = bands([
    ...placed.map((p) => [p.y, p.y + NODE_HEIGHT]),
    ...Object.values(result.edges).flatMap((e) => (e.label ? [[e.label.y, e.label.y + e.label.height]] : [])),
  ]);
  const rowOf = (y: number) => rows.findIndex(([top, bottom]) => y >= top && y <= bottom);
  const gap = (i: number, below: boolean) => {
    const next = rows[below ? i + 1 : i - 1];
    const space = next ? (below ? next[0] - rows[i][1] : rows[i][0] - next[1]) : 48;
    return Math.max(8, Math.min(24, space / 3));
  };
  let right = Math.max(
    ...placed.map((p) => p.x + NODE_WIDTH),
    ...Object.values(result.edges).flatMap((e) => [...e.points.map((p) => p.x), ...(e.label ? [e.label.x + e.label.width] : [])]),
  );
  for (const e of edges) {
    const [source, port] = portOf(e.sources[0]);
    const [target] = portOf(e.targets[0]);
    const s = result.nodes[source];
    const t = result.nodes[target];
    if (!s || !t) continue;
    const sRow = rowOf(s.y);
    const tRow = rowOf(t.y);
    const out = rows[sRow][1] + gap(sRow, true);
    const into = rows[tRow][0] - gap(tRow, false);
    const x = right + 40;
    // the error port is at the bottom; a type's own port (a Loop's body) below next on the right
    const error = port === keys.error;
    const start = error ? { x: s.x + NODE_WIDTH / 2, y: s.y + NODE_HEIGHT }
      : { x: s.x + NODE_WIDTH, y: s.y + (port === keys.next ? NODE_HEIGHT / 2 : NODE_HEIGHT * 0.67) };
    const end = { x: t.x, y: t.y + NODE_HEIGHT / 2 };
    const points = [
      start,
      ...(error ? [] : [{ x: start.x + 16, y: start.y }]),
      { x: error ? start.x : start.x + 16, y: out },
      { x, y: out },
      { x, y: into },
      { x: end.x - 16, y: into },
      { x: end.x - 16, y: end.y },
      end,
    ];
    const l = e.labels?.[0];
    const label = l ? { x: x + 8, y: (out + into) / 2 - (l.height ?? 0) / 2, width: l.width ?? 0, height: l.height ?? 0 } : undefined;
    result.edges[e.id] = { points, label };
    right = x + (label ? label.width + 8 : 0);
  }
}

function measure(name: string, start: number): void {
  try {
    performance.measure(name, { start, end: performance.now(), detail: null });
  } catch {
    // timing marks are optional (older browsers, tests)
  }
}

/**
 * Blocks with a written position stay where they are; if an automatically
 * placed block would cover one of them, every automatically placed block
 * moves below them together (keeping the automatic arrangement intact).
 */
export function avoidWritten(
  layout: LayoutResult,
  written: Record<string, { x: number; y: number }>,
  size: { width: number; height: number },
  gap = 60,
): LayoutResult {
  const fixed = Object.values(written);
  const autoIds = Object.keys(layout.nodes).filter((id) => !(id in written));
  if (!fixed.length || !autoIds.length) return layout;
  const hits = (a: { x: number; y: number }, b: { x: number; y: number }) =>
    a.x < b.x + size.width && b.x < a.x + size.width && a.y < b.y + size.height && b.y < a.y + size.height;
  const overlap = autoIds.some((id) => fixed.some((f) => hits(layout.nodes[id], f)));
  if (!overlap) return layout;
  const bottom = Math.max(...fixed.map((f) => f.y + size.height));
  const top = Math.min(...autoIds.map((id) => layout.nodes[id].y));
  const left = Math.min(...fixed.map((f) => f.x));
  const autoLeft = Math.min(...autoIds.map((id) => layout.nodes[id].x));
  const dx = left - autoLeft;
  const dy = bottom + gap - top;
  const nodes = { ...layout.nodes };
  for (const id of autoIds) nodes[id] = { x: nodes[id].x + dx, y: nodes[id].y + dy };
  const edges: LayoutResult['edges'] = {};
  for (const [id, e] of Object.entries(layout.edges)) {
    edges[id] = {
      points: e.points.map((p) => ({ x: p.x + dx, y: p.y + dy })),
      label: e.label ? { ...e.label, x: e.label.x + dx, y: e.label.y + dy } : undefined,
    };
  }
  return { nodes, edges };
}
