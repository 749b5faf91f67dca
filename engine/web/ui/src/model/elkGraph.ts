/**
 * The ELK graph of a diagram: layered, left to right, ports on fixed sides, back links routed as feedback
 * edges, edge labels sized and placed by ELK, Loop bodies laid out inside their own box. Pure (no ELK here):
 * vite.config.ts also builds the warm-up graph that index.html hands ELK's worker.
 */
import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api';
import type { Diagram } from '../api/types';
import { diagramEdges } from './graph';
import { edgeLabelText, GROUP_PADDING, LABEL_HEIGHT, labelWidth, NODE_HEIGHT, NODE_WIDTH } from './sizes';

/** From this many blocks on, a diagram counts as large: ELK spends less effort on crossings (it is the slow part). */
export const LARGE_DIAGRAM = 100;
/** From this many blocks on, long chains wrap into rows (a single row of 200 blocks is unreadable when fitted). */
export const WRAP_DIAGRAM = 40;
/** The shape (width / height) wrapped layouts aim for: about a screen's. */
export const WRAP_ASPECT_RATIO = 1.6;

/**
 * The root's options: layered, left to right, ports on fixed sides, back links as feedback edges routed around
 * the blocks, edge labels placed by ELK (inline, so they never overlap). Loop bodies need ELK's hierarchical
 * mode; without them the flat mode gives the same layout, faster. Large diagrams get fewer crossing-minimisation
 * passes, and long chains wrap into rows.
 */
export function rootOptions(blocks: number, hasGroups: boolean): Record<string, string> {
  return {
    'elk.algorithm': 'layered',
    'elk.direction': 'RIGHT',
    'elk.hierarchyHandling': hasGroups ? 'INCLUDE_CHILDREN' : 'SEPARATE_CHILDREN',
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
    ...(blocks >= LARGE_DIAGRAM ? { 'elk.layered.thoroughness': '2' } : {}),
    ...(blocks >= WRAP_DIAGRAM && !hasGroups ? {
      'elk.layered.wrapping.strategy': 'MULTI_EDGE',
      'elk.aspectRatio': String(WRAP_ASPECT_RATIO),
    } : {}),
  };
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
    layoutOptions: rootOptions(diagram.blocks.length, sorted.length > 0),
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

/**
 * A small diagram like the real ones (a chain, a branch and a back link with labels, an error link) that
 * index.html has ELK's worker lay out while the page loads, with a large diagram's options (wrapping included),
 * so that the code the real layout runs is already compiled when the diagram arrives.
 */
export const WARM_UP: Diagram = {
  blocks: [
    { id: 'start', type: 'Start', next: 'w1' },
    ...Array.from({ length: 11 }, (_, i) => ({
      id: `w${i + 1}`,
      type: 'Set',
      ...(i === 10 ? { next: [{ to: 'w3', when: '{{ n < 9 }}' }] }
        : i === 3 ? { next: [{ to: 'w6', when: '{{ n > 1 }}' }, { to: 'w5' }] }
        : i === 6 ? { next: 'w8', on_error: 'w10' }
        : { next: `w${i + 2}` }),
    })),
  ],
};

/** The warm-up graph, as ELK's worker takes it. */
export function warmUpGraph(): ElkNode {
  const graph = buildElkGraph(WARM_UP, []);
  graph.layoutOptions = rootOptions(LARGE_DIAGRAM, false);
  return graph;
}
