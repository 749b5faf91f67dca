/**
 * The ELK graph of a diagram: layered, left to right, ports on fixed sides, back links routed as feedback
 * edges, edge labels sized and placed by ELK, Loop bodies laid out inside their own box.
 */
import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api';
import type { Block, Diagram } from '../api/types';
import { ERROR, NEXT, portsOf, type LinkKeys } from './format';
import { diagramEdges, type EdgeSpec } from './graph';
import { edgeLabelText, GROUP_PADDING, LABEL_HEIGHT, labelWidth, NODE_HEIGHT, NODE_WIDTH } from './sizes';

/** From this many blocks on, a diagram counts as large: ELK spends less effort on crossings (it is the slow part). */
export const LARGE_DIAGRAM = 100;
/** From this many blocks on, long chains wrap into rows (a single row of 200 blocks is unreadable when fitted). */
export const WRAP_DIAGRAM = 40;
/** The shape (width / height) wrapped layouts aim for; ELK's rows come out wider (about 1.2–1.3, a canvas's). */
export const WRAP_ASPECT_RATIO = 1.0;

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
    ...(blocks >= LARGE_DIAGRAM ? { 'elk.layered.thoroughness': '1' } : {}),
    ...(blocks >= WRAP_DIAGRAM && !hasGroups ? {
      'elk.layered.wrapping.strategy': 'MULTI_EDGE',
      'elk.aspectRatio': String(WRAP_ASPECT_RATIO),
    } : {}),
  };
}

/** The block input's port id; the others are the block keys their links are written under. */
export const IN_PORT = 'in';

export function buildElkGraph(diagram: Diagram, bodies: Array<{ loop: string; members: string[] }>, keys: LinkKeys): ElkNode {
  return buildLayoutGraph(diagram, bodies, keys).graph;
}

/** The ELK graph, and the runs of blocks it lays out as one node each (see chainRuns). */
export function buildLayoutGraph(
  diagram: Diagram,
  bodies: Array<{ loop: string; members: string[] }>,
  keys: LinkKeys,
): { graph: ElkNode; runs: Map<string, string[]> } {
  const edges = diagramEdges(diagram, keys);
  const errorSources = new Set(edges.filter((e) => e.kind === ERROR).map((e) => e.source));
  const hasBody = (b: Block) => portsOf(b, keys).length > 0;
  const runs = new Map<string, string[]>();
  const runOf = new Map<string, string>();
  if (diagram.blocks.length >= LARGE_DIAGRAM && !bodies.length) {
    for (const run of chainRuns(diagram, edges, hasBody)) {
      runs.set(`chain:${run[0]}`, run);
      for (const id of run) runOf.set(id, `chain:${run[0]}`);
    }
  }
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
  for (const [id, run] of runs) {
    // a run of blocks as one block-sized node (model/layout makes room for the rest of the run afterwards, so
    // that ELK's wrapped rows keep even columns); its ports are its first block's input and its last block's
    // `next`, so the links from and to the rest keep their ports
    root.children!.push({
      id,
      width: NODE_WIDTH,
      height: NODE_HEIGHT,
      layoutOptions: { 'elk.portConstraints': 'FIXED_ORDER' },
      ports: [[`${run[0]}__${IN_PORT}`, 'WEST'], [`${run[run.length - 1]}__${keys.next}`, 'EAST']].map(([port, side], i) => ({
        id: port, width: 8, height: 8, layoutOptions: { 'elk.port.side': side, 'elk.port.index': String(i) },
      })),
    });
  }
  for (const b of diagram.blocks) {
    if (runOf.has(b.id)) continue;
    const node: ElkNode = {
      id: b.id,
      width: NODE_WIDTH,
      height: NODE_HEIGHT,
      layoutOptions: {
        'elk.portConstraints': 'FIXED_ORDER',
        ...(b.type === 'Start' && !parentOf.has(b.id) ? { 'elk.layered.layering.layerConstraint': 'FIRST' } : {}),
      },
      // input on the left; next, then the type's own ports, on the right; the error port at the bottom, only where
      // an error link leaves (a port without links changes nothing but ELK's work)
      ports: [
        [IN_PORT, 'WEST'], [keys.next, 'EAST'], ...portsOf(b, keys).map((p) => [p, 'EAST']),
        ...(errorSources.has(b.id) ? [[keys.error, 'SOUTH']] : []),
      ].map(([p, side], i) => ({
        id: `${b.id}__${p}`,
        width: 8,
        height: 8,
        layoutOptions: { 'elk.port.side': side, 'elk.port.index': String(i) },
      })),
    };
    elkNodes.set(b.id, node);
    container(parentOf.get(b.id)).children!.push(node);
  }
  for (const e of edges) {
    if (runOf.has(e.source) && runOf.get(e.source) === runOf.get(e.target)) continue; // inside a run
    const text = e.kind === NEXT ? edgeLabelText(e.when, e.index, e.count) : '';
    const edge: ElkExtendedEdge = {
      id: e.id,
      sources: [`${e.source}__${e.key}`],
      targets: [`${e.target}__${IN_PORT}`],
      labels: text ? [{ id: `${e.id}__label`, text, width: labelWidth(text), height: LABEL_HEIGHT }] : [],
    };
    root.edges!.push(edge);
  }
  if (runs.size && root.layoutOptions!['elk.aspectRatio']) {
    // ELK sees each run as one block: aim for rows as much narrower as the runs will widen them
    const nodes = diagram.blocks.length - [...runs.values()].reduce((n, run) => n + run.length - 1, 0);
    root.layoutOptions!['elk.aspectRatio'] = String(WRAP_ASPECT_RATIO * nodes / diagram.blocks.length);
  }
  return { graph: root, runs };
}

/** The longest run of blocks a large diagram's layout treats as one node. */
export const CHAIN_RUN = 4;
/** The horizontal distance ELK leaves between consecutive blocks of a chain (layer spacing and ports). */
export const CHAIN_GAP = 86;

/**
 * Runs of 2 to CHAIN_RUN blocks that follow each other in a plain chain: each block's only link is a `next`
 * without a label to the following block, which no other link enters. ELK's time grows with the number of
 * nodes (about 6 ms a node in a fresh page), and ELK would put such a run in a row anyway: one node per run
 * keeps a long chain's layout (wrapped into rows) at a fraction of the cost. Start blocks, blocks with a body
 * port, and blocks with an error link at a run's end are left out.
 */
export function chainRuns(diagram: Diagram, edges: EdgeSpec[], hasBody: (b: Block) => boolean): string[][] {
  const out = new Map<string, EdgeSpec[]>();
  const into = new Map<string, number>();
  for (const e of edges) {
    out.set(e.source, [...(out.get(e.source) ?? []), e]);
    into.set(e.target, (into.get(e.target) ?? 0) + 1);
  }
  const byId = new Map(diagram.blocks.map((b) => [b.id, b]));
  const free = (id: string) => {
    const b = byId.get(id);
    return !!b && b.type !== 'Start' && !hasBody(b);
  };
  // u → v joins a run when it is u's only link (a plain next) and v's only way in
  const follower = new Map<string, string>();
  for (const [source, links] of out) {
    const e = links[0];
    if (links.length === 1 && e.kind === NEXT && e.count === 1 && !e.when && e.target !== source
      && into.get(e.target) === 1 && free(source) && free(e.target)) follower.set(source, e.target);
  }
  const followed = new Set(follower.values());
  const seen = new Set<string>();
  const runs: string[][] = [];
  const finish = (run: string[]) => {
    // a block with an error link keeps its own error port: a run ends before it (such a block has no
    // follower, so it can only come last)
    if ((out.get(run[run.length - 1]) ?? []).some((e) => e.kind === ERROR)) run.pop();
    if (run.length > 1) runs.push(run);
  };
  const walk = (first: string) => {
    let run: string[] = [];
    for (let id: string | undefined = first; id !== undefined && !seen.has(id); id = follower.get(id)) {
      seen.add(id);
      run.push(id);
      if (run.length === CHAIN_RUN) {
        finish(run);
        run = [];
      }
    }
    if (run.length) finish(run);
  };
  for (const b of diagram.blocks) if (free(b.id) && !followed.has(b.id) && follower.has(b.id)) walk(b.id);
  for (const b of diagram.blocks) if (follower.has(b.id) && !seen.has(b.id)) walk(b.id); // closed chains
  return runs;
}
