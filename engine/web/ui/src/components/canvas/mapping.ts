/**
 * The canvas mapping: the document and what the server and the page know of it (compiled picture, layout,
 * palette, link keys, problems, selection, a run, a drag) turned into React Flow's nodes and edges, the role n8n's
 * `useCanvasMapping` plays. Pure: the same input gives the same picture. Memoised: a block whose look did not
 * change keeps its node object (React Flow and the memoised BlockNode skip it), so a drag on a large diagram
 * rebuilds one node a frame, and the edges only when the links, the layout, the run or the selected link change.
 */
import { MarkerType, type Node } from '@xyflow/react';
import type { BlockType, Compiled, Diagram, Problem, RunData } from '../../api/types';
import { ERROR, NEXT, portsOf, type LinkKeys } from '../../model/format';
import { diagramEdges, edgeId, loopBodies } from '../../model/graph';
import { IN_PORT, type LayoutResult } from '../../model/layout';
import { counts } from '../../model/problems';
import { failedBlocks } from '../../model/run';
import { badgeText, badgeTitle, costsByBlock } from '../../model/cost';
import { handlePoint, routeAround, selfLoop, type Rect, type Route } from '../../model/route';
import { edgeLabelText, GROUP_PADDING, labelWidth, NODE_HEIGHT, NODE_WIDTH } from '../../model/sizes';
import type { XY } from '../../store';
import { blockHandles } from './handles';
import type { BlockCost, BlockNodeType, GroupNodeType, LinkEdgeType, LinkLook, RunMark } from './types';

export interface CanvasInput {
  diagram: Diagram | null;
  compiled: Compiled | null;
  layout: LayoutResult | null;
  palette: BlockType[];
  links: LinkKeys | null;
  problems: Problem[];
  selection: string[];
  selectedEdge: string | null;
  run: RunData | null;
  dragging: Record<string, XY> | null;
  /** the view is zoomed out past reading: blocks are drawn as tiles, without text or handles (BlockNode) */
  overview: boolean;
}

export interface CanvasPicture {
  /** loop groups first (drawn below), then blocks */
  nodes: Node[];
  blocks: BlockNodeType[];
  edges: LinkEdgeType[];
  /** every block has a place (written or laid out): nothing is hidden */
  placed: boolean;
}

export const EDGE_COLOURS: Record<LinkLook, string> = { next: '#64748b', error: '#dc2626', port: '#7c3aed' };
const MEASURED = { width: NODE_WIDTH, height: NODE_HEIGHT };
const TAKEN_COLOUR = '#16a34a';
const SELECTED_COLOUR = '#2563eb';

/** Remembers the last answer of `compute` and gives it again while its inputs are the same objects. */
function memo<A extends unknown[], R>(compute: (...args: A) => R): (...args: A) => R {
  let last: { args: A; result: R } | null = null;
  return (...args: A) => {
    if (last && args.length === last.args.length && args.every((a, i) => a === last!.args[i])) return last.result;
    const result = compute(...args);
    last = { args, result };
    return result;
  };
}

/** Each block's mark from a run: ok, failed, running; how many steps it took. */
export function runMarks(run: RunData | null): Map<string, { mark: RunMark; steps: number }> {
  const marks = new Map<string, { mark: RunMark; steps: number }>();
  if (!run) return marks;
  for (const s of run.steps) {
    const m = marks.get(s.block) ?? { mark: 'ok' as RunMark, steps: 0 };
    m.steps++;
    marks.set(s.block, m);
  }
  for (const id of run.blocks) if (!marks.has(id)) marks.set(id, { mark: 'ok', steps: 1 });
  for (const id of failedBlocks(run)) marks.set(id, { mark: 'failed', steps: marks.get(id)?.steps ?? 1 });
  if (run.status === 'running' && run.steps.length) {
    const last = run.steps[run.steps.length - 1];
    if (last.status === 'running') marks.set(last.block, { mark: 'running', steps: marks.get(last.block)?.steps ?? 1 });
  }
  return marks;
}

/** Each block's cost badge from a run: its requests' sum (a block a loop ran several times: all of its steps). */
export function runCosts(run: RunData | null): Map<string, BlockCost> {
  const costs = new Map<string, BlockCost>();
  if (!run) return costs;
  for (const [block, sum] of costsByBlock(run.steps)) {
    costs.set(block, {
      text: badgeText(sum),
      title: badgeTitle(sum),
      state: sum.unknown === 0 ? 'known' : sum.unknown === sum.requests ? 'unknown' : 'partial',
    });
  }
  return costs;
}

function problemsByBlock(problems: Problem[]): Map<string, Problem[]> {
  const byBlock = new Map<string, Problem[]>();
  for (const p of problems) if (p.block) byBlock.set(p.block, [...(byBlock.get(p.block) ?? []), p]);
  return byBlock;
}

/** The fields a block node is drawn from, each a plain value or an object that stays the same while unchanged. */
interface NodeFacts {
  block: Diagram['blocks'][number];
  x: number;
  y: number;
  hidden: boolean;
  dragging: boolean;
  selected: boolean;
  typeInfo: BlockType | undefined;
  unknownType: boolean;
  errors: number;
  warnings: number;
  firstProblem: string | undefined;
  run: RunMark;
  steps: number;
  passes: number | undefined;
  /** its cost badge's text, tooltip and whether the price is known ('' when it made no request) */
  costText: string;
  costTitle: string;
  costState: BlockCost['state'] | '';
  links: LinkKeys | null;
  ports: readonly string[];
  overview: boolean;
}

/** The facts only React Flow reads (where the node is, its state); the others make its `data`. */
const PLACEMENT: ReadonlySet<keyof NodeFacts> = new Set(['x', 'y', 'hidden', 'dragging', 'selected']);

/** Which facts differ: none (the same node), placement only (the same `data`), or the look too. */
function difference(a: NodeFacts, b: NodeFacts): 'none' | 'placement' | 'look' {
  let found: 'none' | 'placement' = 'none';
  for (const key of Object.keys(a) as Array<keyof NodeFacts>) {
    if (a[key] === b[key]) continue;
    if (!PLACEMENT.has(key)) return 'look';
    found = 'placement';
  }
  return found;
}

/**
 * A block's node; `data` and `handles` from the node it replaces when only its place or state changed, so BlockNode
 * is skipped.
 */
function blockNode(f: NodeFacts, old?: BlockNodeType): BlockNodeType {
  const { block: b } = f;
  const isStart = !!f.typeInfo?.is_start;
  return {
    id: b.id,
    type: 'block',
    position: { x: f.x, y: f.y },
    dragging: f.dragging,
    hidden: f.hidden,
    selected: f.selected,
    width: NODE_WIDTH,
    height: NODE_HEIGHT,
    // its size is fixed (React Flow sets width and height on it): said here, so that React Flow does not measure
    // again each node object it is given, as it would every frame of a drag
    measured: MEASURED,
    handles: old?.handles ?? blockHandles(isStart, f.links?.next, f.ports, f.links?.error),
    ariaLabel: `${b.type} block ${b.id}${b.label ? ` (${b.label})` : ''}${f.errors ? `, ${f.errors} errors` : ''}`,
    data: old?.data ?? {
      block: b,
      typeInfo: f.typeInfo,
      unknownType: f.unknownType,
      isStart,
      errors: f.errors,
      warnings: f.warnings,
      firstProblem: f.firstProblem,
      run: f.run,
      steps: f.steps,
      passes: f.passes,
      cost: f.costText ? { text: f.costText, title: f.costTitle, state: f.costState || 'known' } : undefined,
      nextKey: f.links?.next,
      errorKey: f.links?.error,
      ports: f.ports,
      overview: f.overview,
    },
  };
}

function groupNodes(blocks: BlockNodeType[], bodies: Array<{ loop: string; members: string[] }>, run: RunData | null): GroupNodeType[] {
  const byId = new Map(blocks.map((n) => [n.id, n]));
  return bodies.flatMap(({ loop, members }) => {
    const ms = members.map((m) => byId.get(m)).filter((n): n is BlockNodeType => !!n && !n.hidden);
    if (!ms.length) return [];
    const x0 = Math.min(...ms.map((n) => n.position.x)) - GROUP_PADDING.left;
    const y0 = Math.min(...ms.map((n) => n.position.y)) - GROUP_PADDING.top;
    const x1 = Math.max(...ms.map((n) => n.position.x + NODE_WIDTH)) + GROUP_PADDING.right;
    const y1 = Math.max(...ms.map((n) => n.position.y + NODE_HEIGHT)) + GROUP_PADDING.bottom;
    const passes = run?.passes[loop];
    return [{
      id: `group:${loop}`,
      type: 'loopGroup' as const,
      position: { x: x0, y: y0 },
      width: x1 - x0,
      height: y1 - y0,
      style: { width: x1 - x0, height: y1 - y0 },
      data: { loop, title: `${loop} body${passes !== undefined ? ` · ${passes} pass${passes === 1 ? '' : 'es'}` : ''}`, run: null },
      selectable: false,
      draggable: false,
      focusable: false,
      connectable: false,
      zIndex: -1,
    }];
  });
}

/**
 * A route for every link: ELK's where both blocks sit where ELK put them, else one around the blocks
 * (model/route), and a link to its own block over its top. Recomputed when the diagram or the layout changes.
 */
export function linkRoutes(diagram: Diagram | null, links: LinkKeys | null, layout: LayoutResult | null): Map<string, Route> {
  const routes = new Map<string, Route>();
  if (!diagram || !links) return routes;
  const auto = new Set(diagram.blocks.filter((b) => !Array.isArray(b.position)).map((b) => b.id));
  const rects = new Map<string, Rect>();
  for (const b of diagram.blocks) {
    const p = Array.isArray(b.position) ? { x: Number(b.position[0]) || 0, y: Number(b.position[1]) || 0 } : layout?.nodes[b.id];
    if (p) rects.set(b.id, { x: p.x, y: p.y, width: NODE_WIDTH, height: NODE_HEIGHT });
  }
  const all = [...rects.values()];
  // the labels placed so far: a later link's label keeps clear of them where its route allows
  const labels: Rect[] = [];
  const byId = new Map(diagram.blocks.map((b) => [b.id, b]));
  for (const e of diagramEdges(diagram, links)) {
    const elk = auto.has(e.source) && auto.has(e.target) && e.source !== e.target ? layout?.edges[e.id] : undefined;
    if (elk) {
      routes.set(e.id, elk);
      if (elk.label) labels.push(elk.label);
      continue;
    }
    const from = rects.get(e.source);
    const to = rects.get(e.target);
    const block = byId.get(e.source);
    if (!from || !to || !block) continue;
    const ports = portsOf(block, links);
    const down = e.kind === ERROR;
    const s = down ? handlePoint(from, 'bottom') : handlePoint(from, 'right', e.kind === NEXT ? 0 : ports.indexOf(e.key) + 1, ports.length + 1);
    const t = handlePoint(to, 'in');
    const text = e.kind === NEXT ? edgeLabelText(e.when, e.index, e.count) : '';
    const width = text ? labelWidth(text) : 0;
    const route = e.source === e.target ? selfLoop(s, down, t, from, width, all, labels) : routeAround(s, down, t, from, to, all, width, labels);
    if (route.label) labels.push(route.label);
    routes.set(e.id, route);
  }
  return routes;
}

/** The problems written at a `next` link (field `next[1]`, `next[1].to`, `next[1].when`), by the link's edge id. */
export function linkProblems(problems: Problem[]): Map<string, string> {
  const byLink = new Map<string, string>();
  for (const p of problems) {
    const m = p.block && p.field ? /^next\[(\d+)\]/.exec(p.field) : null;
    if (!m || byLink.has(edgeId(NEXT, p.block!, Number(m[1])))) continue;
    byLink.set(edgeId(NEXT, p.block!, Number(m[1])), `${p.message}${p.hint ? ` — ${p.hint}` : ''}`);
  }
  return byLink;
}

function linkEdges(diagram: Diagram | null, links: LinkKeys | null, routes: Map<string, Route>, selectedEdge: string | null,
  run: RunData | null, problems: Problem[]): LinkEdgeType[] {
  if (!diagram || !links) return [];
  const atLink = linkProblems(problems);
  const taken = new Set((run?.links ?? []).map(([s, t]) => `${s}→${t}`));
  return diagramEdges(diagram, links).map((e): LinkEdgeType => {
    const look: LinkLook = e.kind === NEXT ? 'next' : e.kind === ERROR ? 'error' : 'port';
    const isTaken = taken.has(`${e.source}→${e.target}`);
    const selected = e.id === selectedEdge;
    const colour = isTaken ? TAKEN_COLOUR : selected ? SELECTED_COLOUR : EDGE_COLOURS[look];
    return {
      id: e.id,
      type: 'link',
      source: e.source,
      target: e.target,
      sourceHandle: e.key,
      targetHandle: IN_PORT,
      selected,
      animated: isTaken && run?.status === 'running',
      zIndex: selected ? 10 : 0,
      markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16, color: colour },
      ariaLabel: `${e.kind} link from ${e.source} to ${e.target}${e.when ? ` when ${e.when}` : ''}${atLink.has(e.id) ? `: ${atLink.get(e.id)}` : ''}`,
      data: {
        kind: e.kind,
        look,
        label: e.kind === NEXT ? edgeLabelText(e.when, e.index, e.count) : '',
        when: e.when,
        index: e.index,
        count: e.count,
        route: routes.get(e.id),
        self: e.source === e.target,
        taken: isTaken,
        dimmed: !!run && !isTaken,
        problem: atLink.get(e.id),
      },
    };
  });
}

const INPUT_KEYS = ['diagram', 'compiled', 'layout', 'palette', 'links', 'problems', 'selection', 'selectedEdge', 'run',
  'dragging', 'overview'] as const satisfies ReadonlyArray<keyof CanvasInput>;

/** True when `b` is `a` with another drag: every other input the same object. */
export function draggingOnlyChanged(a: CanvasInput, b: CanvasInput): boolean {
  return INPUT_KEYS.every((k) => k === 'dragging' || a[k] === b[k]);
}

/** The blocks whose place differs between two drags: moved, or picked up or let go by one of them. */
export function movedBy(before: Record<string, XY> | null, after: Record<string, XY> | null): Set<string> {
  const moved = new Set<string>();
  for (const [id, p] of Object.entries(after ?? {})) {
    const q = before?.[id];
    if (!q || q.x !== p.x || q.y !== p.y) moved.add(id);
  }
  for (const id of Object.keys(before ?? {})) if (!after || !(id in after)) moved.add(id);
  return moved;
}

/** A mapping with its own memory of the last picture (one per canvas). */
export function createCanvasMapping(): (input: CanvasInput) => CanvasPicture {
  const byBlock = memo(problemsByBlock);
  const marks = memo(runMarks);
  const costs = memo(runCosts);
  const types = memo((palette: BlockType[]) => new Map(palette.map((t) => [t.type, t])));
  const bodies = memo((diagram: Diagram | null, compiled: Compiled | null, links: LinkKeys | null) =>
    (diagram && links ? loopBodies(diagram, compiled, links) : []));
  const edges = memo(linkEdges);
  // an edge whose look did not change keeps its object (an edit of one block, typed in the YAML pane, rebuilds the
  // list): React Flow and the memoised LinkEdge skip it
  let edgeCache = new Map<string, { key: string; edge: LinkEdgeType }>();
  let lastEdges: LinkEdgeType[] = [];
  const stableEdges = (list: LinkEdgeType[]): LinkEdgeType[] => {
    const next = new Map<string, { key: string; edge: LinkEdgeType }>();
    const out = list.map((e) => {
      const d = e.data!;
      const key = [e.source, e.target, e.sourceHandle, e.selected, e.animated, e.zIndex, d.label, d.when, d.index, d.count, d.taken,
        d.dimmed, d.self, d.problem, (e.markerEnd as { color?: string }).color].join('\u0000');
      const old = edgeCache.get(e.id);
      const kept = old && old.key === key && old.edge.data!.route === d.route ? old.edge : e;
      next.set(e.id, { key, edge: kept });
      return kept;
    });
    edgeCache = next;
    if (out.length !== lastEdges.length || out.some((e, i) => e !== lastEdges[i])) lastEdges = out;
    return lastEdges;
  };
  const routes = memo(linkRoutes);
  const groups = memo(groupNodes);
  const stable = memo(stableEdges);
  let cache = new Map<string, { facts: NodeFacts; node: BlockNodeType }>();
  let lastBlocks: BlockNodeType[] = [];
  let lastNodes: Node[] = [];
  let lastInput: CanvasInput | null = null;

  return (input) => {
    const { diagram, layout, palette, links, selection, run, dragging } = input;
    // a frame of a drag changes `dragging` only: the blocks it moves (and the ones it let go) are the only ones to
    // look at again, not every block of a large diagram
    const only = lastInput && draggingOnlyChanged(lastInput, input) ? movedBy(lastInput.dragging, dragging) : null;
    lastInput = input;
    const problems = byBlock(input.problems);
    const runMarks = marks(run);
    const blockCosts = costs(run);
    const typeOf = types(palette);
    const selected = new Set(selection);
    const next = only ? cache : new Map<string, { facts: NodeFacts; node: BlockNodeType }>();
    const blocks = (diagram?.blocks ?? []).map((b, i): BlockNodeType => {
      const old = cache.get(b.id);
      if (only && old && !only.has(b.id)) return old.node;
      const written = Array.isArray(b.position) ? { x: Number(b.position[0]) || 0, y: Number(b.position[1]) || 0 } : undefined;
      const auto = layout?.nodes[b.id];
      const moving = dragging?.[b.id];
      const place = moving ?? written ?? auto ?? { x: (i % 4) * 280, y: Math.floor(i / 4) * 140 };
      const mine = problems.get(b.id) ?? [];
      const c = mine.length ? counts(mine) : { errors: 0, warnings: 0 };
      const mark = runMarks.get(b.id);
      const cost = blockCosts.get(b.id);
      const typeInfo = typeOf.get(b.type);
      const facts: NodeFacts = {
        block: b,
        x: place.x,
        y: place.y,
        // nothing is shown before the link keys are known: a block's handles are named by them
        hidden: !links || (!written && !auto),
        dragging: !!moving,
        selected: selected.has(b.id),
        typeInfo,
        unknownType: !typeInfo && palette.length > 0,
        errors: c.errors,
        warnings: c.warnings,
        firstProblem: mine[0] ? `${mine[0].message}${mine[0].hint ? ` — ${mine[0].hint}` : ''}` : undefined,
        run: run ? (mark?.mark ?? 'skipped') : null,
        steps: mark?.steps ?? 0,
        passes: run?.passes[b.id],
        costText: cost?.text ?? '',
        costTitle: cost?.title ?? '',
        costState: cost?.state ?? '',
        links,
        ports: links ? portsOf(b, links) : [],
        overview: input.overview,
      };
      const changed = old ? difference(old.facts, facts) : 'look';
      const entry = changed === 'none' ? old! : { facts, node: blockNode(facts, changed === 'placement' ? old!.node : undefined) };
      next.set(b.id, entry);
      return entry.node;
    });
    cache = next;
    if (blocks.length === lastBlocks.length && blocks.every((n, i) => n === lastBlocks[i])) {
      // nothing moved or changed: the same arrays, so React Flow has nothing to compare
    } else lastBlocks = blocks;
    const boxes = groups(lastBlocks, bodies(diagram, input.compiled, links), run);
    if (lastNodes.length !== boxes.length + lastBlocks.length || boxes.some((g, i) => lastNodes[i] !== g)
      || lastBlocks.some((n, i) => lastNodes[boxes.length + i] !== n)) {
      lastNodes = [...boxes, ...lastBlocks];
    }
    return {
      nodes: lastNodes,
      blocks: lastBlocks,
      edges: stable(edges(diagram, links, routes(diagram, links, layout), input.selectedEdge, run, input.problems)),
      placed: !lastBlocks.some((n) => n.hidden),
    };
  };
}
