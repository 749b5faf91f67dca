/**
 * Automatic layered layout with ELK (left to right, ports on fixed sides, back
 * links routed as feedback edges, edge labels sized and placed by ELK, Loop
 * bodies laid out inside their own box).
 */
import type { ElkExtendedEdge, ElkNode, ElkPoint } from 'elkjs/lib/elk-api';
import type { Diagram } from '../api/types';
import { diagramEdges } from './graph';
import { edgeLabelText, GROUP_PADDING, LABEL_HEIGHT, labelWidth, NODE_HEIGHT, NODE_WIDTH } from './sizes';

export interface LayoutResult {
  nodes: Record<string, { x: number; y: number }>;
  edges: Record<string, { points: ElkPoint[]; label?: { x: number; y: number; width: number; height: number } }>;
}

type ElkLike = { layout: (graph: ElkNode) => Promise<ElkNode> };
let elkPromise: Promise<ElkLike> | null = null;

function elk(): Promise<ElkLike> {
  elkPromise ??= import('elkjs/lib/elk.bundled.js').then((m) => new m.default() as unknown as ElkLike);
  return elkPromise;
}

const PORT = { in: 'WEST', next: 'EAST', body: 'EAST', on_error: 'SOUTH' } as const;

export function buildElkGraph(
  diagram: Diagram,
  bodies: Array<{ loop: string; members: string[] }>,
  bodyTypes: ReadonlySet<string> = new Set(),
): ElkNode {
  const ids = diagram.blocks.map((b) => b.id);
  // each block goes into the innermost body containing it
  const sorted = [...bodies].sort((a, b) => a.members.length - b.members.length);
  const parentOf = new Map<string, string>();
  for (const body of sorted) {
    for (const m of body.members) if (!parentOf.has(m) && m !== body.loop) parentOf.set(m, `body:${body.loop}`);
  }
  const groupParent = new Map<string, string | undefined>();
  for (const body of sorted) groupParent.set(`body:${body.loop}`, parentOf.get(body.loop));

  const elkNodes = new Map<string, ElkNode>();
  const root: ElkNode = {
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'RIGHT',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.edgeRouting': 'ORTHOGONAL',
      'elk.layered.feedbackEdges': 'true',
      'elk.layered.cycleBreaking.strategy': 'DEPTH_FIRST',
      'elk.layered.spacing.nodeNodeBetweenLayers': '70',
      'elk.spacing.nodeNode': '48',
      'elk.spacing.edgeNode': '24',
      'elk.spacing.edgeEdge': '14',
      'elk.spacing.edgeLabel': '4',
      'elk.layered.spacing.edgeNodeBetweenLayers': '28',
      'elk.edgeLabels.inline': 'true',
      'elk.edgeLabels.placement': 'CENTER',
      'elk.layered.nodePlacement.strategy': 'BRANDES_KOEPF',
      'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
      'elk.json.edgeCoords': 'ROOT',
      'elk.json.shapeCoords': 'ROOT',
      'elk.padding': '[top=24,left=24,bottom=24,right=24]',
    },
    children: [],
    edges: [],
  };
  const container = (id: string | undefined): ElkNode => (id ? elkNodes.get(id) ?? root : root);
  // groups first (outer before inner), then blocks
  const groupIds = [...groupParent.keys()].sort((a, b) => depth(a) - depth(b));
  function depth(g: string): number {
    let d = 0;
    for (let p = groupParent.get(g); p; p = groupParent.get(p)) d++;
    return d;
  }
  for (const g of groupIds) {
    const node: ElkNode = {
      id: g,
      layoutOptions: {
        'elk.padding': `[top=${GROUP_PADDING.top},left=${GROUP_PADDING.left},bottom=${GROUP_PADDING.bottom},right=${GROUP_PADDING.right}]`,
        'elk.direction': 'RIGHT',
      },
      children: [],
    };
    elkNodes.set(g, node);
  }
  for (const g of groupIds) container(groupParent.get(g)).children!.push(elkNodes.get(g)!);
  for (const b of diagram.blocks) {
    const node: ElkNode = {
      id: b.id,
      width: NODE_WIDTH,
      height: NODE_HEIGHT,
      layoutOptions: {
        'elk.portConstraints': 'FIXED_ORDER',
        ...(b.type === 'Start' && !parentOf.has(b.id) ? { 'elk.layered.layering.layerConstraint': 'FIRST' } : {}),
      },
      ports: (['in', 'next', 'body', 'on_error'] as const)
        .filter((p) => p !== 'body' || typeof b.body === 'string' || bodyTypes.has(b.type)).map((p, i) => ({
        id: `${b.id}__${p}`,
        width: 8,
        height: 8,
        layoutOptions: { 'elk.port.side': PORT[p], 'elk.port.index': String(i) },
      })),
    };
    elkNodes.set(b.id, node);
    container(parentOf.get(b.id)).children!.push(node);
  }
  const known = new Set(ids);
  for (const e of diagramEdges(diagram)) {
    if (!known.has(e.source) || !known.has(e.target)) continue;
    const port = e.kind === 'error' ? 'on_error' : e.kind === 'body' ? 'body' : 'next';
    const text = e.kind === 'next' ? edgeLabelText(e.when, e.index, e.count) : '';
    const edge: ElkExtendedEdge = {
      id: e.id,
      sources: [`${e.source}__${port}`],
      targets: [`${e.target}__in`],
      labels: text ? [{ id: `${e.id}__label`, text, width: labelWidth(text), height: LABEL_HEIGHT }] : [],
    };
    root.edges!.push(edge);
  }
  return root;
}

/** Positions for every block (top-left corners) and ELK's routes for the links. */
export async function layoutDiagram(
  diagram: Diagram,
  bodies: Array<{ loop: string; members: string[] }>,
  bodyTypes: ReadonlySet<string> = new Set(),
): Promise<LayoutResult> {
  const graph = buildElkGraph(diagram, bodies, bodyTypes);
  const out = await (await elk()).layout(graph);
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
