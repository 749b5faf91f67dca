/**
 * Automatic layered layout with ELK (the graph: model/elkGraph), in a Web Worker where the page has them.
 */
import type { ElkExtendedEdge, ElkNode, ElkPoint } from 'elkjs/lib/elk-api';
import ElkApi from 'elkjs/lib/elk-api.js';
import workerUrl from 'elkjs/lib/elk-worker.min.js?url';
import type { Diagram } from '../api/types';
import { buildElkGraph } from './elkGraph';

export { buildElkGraph, LARGE_DIAGRAM, rootOptions, WRAP_ASPECT_RATIO, WRAP_DIAGRAM } from './elkGraph';

export interface LayoutResult {
  nodes: Record<string, { x: number; y: number }>;
  edges: Record<string, { points: ElkPoint[]; label?: { x: number; y: number; width: number; height: number } }>;
}

type ElkLike = { layout: (graph: ElkNode) => Promise<ElkNode> };
let elkPromise: Promise<ElkLike> | null = null;

/**
 * ELK, in a Web Worker where the page has workers (its 1.6 MB script is loaded, compiled and run off the main
 * thread, so the page keeps drawing while a large diagram is laid out), else (tests, no Worker) in-process.
 * In the built page, index.html has already started the worker and warmed it up with a small layout (the first
 * layout in a fresh worker is slow: ELK's code is not compiled yet); `preloadLayout()` starts it otherwise.
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
  bodyTypes: ReadonlySet<string> = new Set(),
): Promise<LayoutResult> {
  const graph = buildElkGraph(diagram, bodies, bodyTypes);
  const key = JSON.stringify(graph);
  if (latest?.key === key) return latest.result;
  const result = runLayout(diagram, graph);
  latest = { key, result };
  result.catch(() => {
    if (latest?.result === result) latest = null;
  });
  return result;
}

async function runLayout(diagram: Diagram, graph: ElkNode): Promise<LayoutResult> {
  const engine = await elk();
  const began = performance.now();
  const out = await engine.layout(graph);
  measure('studio:elk-layout', began);
  const result: LayoutResult = { nodes: {}, edges: {} };
  const blockIds = new Set(diagram.blocks.map((b) => b.id));
  const walk = (n: ElkNode) => {
    for (const c of n.children ?? []) {
      if (blockIds.has(c.id)) result.nodes[c.id] = { x: Math.round(c.x ?? 0), y: Math.round(c.y ?? 0) };
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
        points: [s.startPoint, ...(s.bendPoints ?? []), s.endPoint],
        label: l && l.x !== undefined && l.y !== undefined
          ? { x: l.x, y: l.y, width: l.width ?? 0, height: l.height ?? 0 } : undefined,
      };
    }
    for (const c of n.children ?? []) collect(c);
  };
  collect(out);
  return result;
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
