import { describe, expect, it } from 'vitest';
import {
  CHAIN_RUN, chainRuns, layoutDiagram, LARGE_DIAGRAM, rootOptions, routeAround, WRAP_DIAGRAM, type LayoutResult,
} from './layout';
import { buildLayoutGraph } from './elkGraph';
import { diagramEdges } from './graph';
import { loopBodies } from './graph';
import { keys, loopDiagram, orderAgent } from '../test/fixtures';
import { NODE_HEIGHT, NODE_WIDTH } from './sizes';
import type { Diagram } from '../api/types';

function overlaps(a: { x: number; y: number }, b: { x: number; y: number }): boolean {
  return a.x < b.x + NODE_WIDTH && b.x < a.x + NODE_WIDTH && a.y < b.y + NODE_HEIGHT && b.y < a.y + NODE_HEIGHT;
}

async function check(d: Diagram) {
  const result = await layoutDiagram(d, loopBodies(d, null, keys), keys);
  const ids = d.blocks.map((b) => b.id);
  expect(Object.keys(result.nodes).sort()).toEqual([...ids].sort());
  for (let i = 0; i < ids.length; i++) {
    for (let j = i + 1; j < ids.length; j++) {
      expect(overlaps(result.nodes[ids[i]], result.nodes[ids[j]]), `${ids[i]} overlaps ${ids[j]}`).toBe(false);
    }
  }
  return result;
}

describe('layoutDiagram', () => {
  it('places every block of a branching diagram with back links, without overlaps', async () => {
    const r = await check(orderAgent());
    expect(r.nodes.start.x).toBeLessThan(r.nodes.ask.x);
    expect(r.nodes.ask.x).toBeLessThan(r.nodes.done.x);
    expect(Object.keys(r.edges)).toContain('next:ask:0');
    expect(r.edges['next:ask:0'].label).toBeDefined();
  });
  it('lays out a Loop body inside its box', async () => {
    const r = await check(loopDiagram());
    expect(r.nodes.each.x).toBeLessThan(r.nodes.classify.x);
  });
  it('handles a larger generated diagram', async () => {
    const blocks = Array.from({ length: 30 }, (_, i) => ({ id: `b${i}`, type: 'Set',
      next: i < 29 ? [{ to: `b${i + 1}` }, ...(i % 3 === 0 ? [{ to: `b${(i * 7) % 30}`, when: `{{ x > ${i} }}` }] : [])] : undefined }));
    await check({ blocks: [{ id: 'start', type: 'Start', next: 'b0' }, ...blocks] } as Diagram);
  });
  it('labels of edges do not overlap each other', async () => {
    const d = orderAgent();
    const r = await layoutDiagram(d, [], keys);
    const labels = Object.values(r.edges).map((e) => e.label).filter((l): l is NonNullable<typeof l> => !!l);
    for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++) {
      const a = labels[i]; const b = labels[j];
      const hit = a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
      expect(hit).toBe(false);
    }
  });
});

/** The benchmark's diagram (benchmarks/studio_open.py): a chain with a `when` branch every 25 blocks and a loop back. */
function generated(blocks: number): Diagram {
  const last = blocks - 1;
  const list: Diagram['blocks'] = [{ id: 'start', type: 'Start', next: 'b1' }];
  for (let i = 1; i < blocks; i++) {
    const next = i === last ? [{ to: `b${Math.max(1, Math.floor((blocks * 3) / 4))}`, when: '{{ n < 250 }}' }]
      : i % 25 === 0 && i + 2 <= last ? [{ to: `b${i + 2}`, when: '{{ n % 2 == 0 }}' }, { to: `b${i + 1}` }]
      : `b${i + 1}`;
    list.push({ id: `b${i}`, type: 'Set', set: { n: '{{ n + 1 }}' }, next });
  }
  return { diagram: 'generated', blocks: list };
}

type Box = { x: number; y: number; width: number; height: number };
const hit = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

describe('layout options', () => {
  it('keeps small diagrams in one flow (no wrapping) and flat graphs out of the hierarchical mode', () => {
    const small = rootOptions(12, false);
    expect(small['elk.layered.wrapping.strategy']).toBeUndefined();
    expect(small['elk.layered.thoroughness']).toBeUndefined();
    expect(small['elk.hierarchyHandling']).toBe('SEPARATE_CHILDREN');
    expect(rootOptions(12, true)['elk.hierarchyHandling']).toBe('INCLUDE_CHILDREN');
  });
  it('wraps long diagrams into rows and spends less effort on large ones', () => {
    expect(rootOptions(WRAP_DIAGRAM, false)['elk.layered.wrapping.strategy']).toBe('MULTI_EDGE');
    expect(rootOptions(WRAP_DIAGRAM, false)['elk.aspectRatio']).toBeDefined();
    expect(rootOptions(LARGE_DIAGRAM, false)['elk.layered.thoroughness']).toBe('1');
    // Loop bodies (ELK's hierarchical mode) are not wrapped
    expect(rootOptions(LARGE_DIAGRAM, true)['elk.layered.wrapping.strategy']).toBeUndefined();
  });
  it('lays a short chain out in one row', async () => {
    const r = await check(generated(12));
    expect(new Set(Object.values(r.nodes).map((p) => p.y)).size).toBe(1);
  });
});

describe('chain runs', () => {
  it('groups plain chains of a large diagram into runs of at most CHAIN_RUN blocks, never across a branch', () => {
    const d = generated(200);
    const runs = chainRuns(d, diagramEdges(d, keys), () => false);
    const inRuns = runs.flat();
    expect(new Set(inRuns).size).toBe(inRuns.length);
    for (const run of runs) {
      expect(run.length).toBeGreaterThanOrEqual(2);
      expect(run.length).toBeLessThanOrEqual(CHAIN_RUN);
    }
    expect(inRuns).not.toContain('start');
    // b25 branches (two labelled links): it may end a run, never continue one; b27 is entered twice: it starts one
    expect(runs.some((run) => run.indexOf('b25') >= 0 && run.indexOf('b25') < run.length - 1)).toBe(false);
    expect(runs.some((run) => run.indexOf('b27') > 0)).toBe(false);
    // a block with an error link keeps its own error port: it never ends a run
    const withError = { ...d, blocks: d.blocks.map((b) => (b.id === 'b10' ? { ...b, on_error: 'b12' } : b)) };
    expect(chainRuns(withError, diagramEdges(withError, keys), () => false).some((run) => run.includes('b10'))).toBe(false);
  });
  it('lays small diagrams out block by block, large ones with a node per run', () => {
    expect(buildLayoutGraph(generated(LARGE_DIAGRAM - 1), [], keys).runs.size).toBe(0);
    const { graph, runs } = buildLayoutGraph(generated(200), [], keys);
    expect(runs.size).toBeGreaterThan(0);
    expect(graph.children!.length).toBe(200 - [...runs.values()].reduce((n, run) => n + run.length - 1, 0));
  });
});

describe('layout of a large branching diagram', () => {
  it('places every block without overlaps and keeps links orthogonal, runs and branches mixed', async () => {
    // chains of varied length, branches that skip ahead, back links, error links
    const blocks: Diagram['blocks'] = [{ id: 'start', type: 'Start', next: 'b0' }];
    for (let i = 0; i < 150; i++) {
      const next = i === 149 ? undefined
        : i % 11 === 3 ? [{ to: `b${Math.min(149, i + 4)}`, when: `{{ x > ${i} }}` }, { to: `b${i + 1}` }]
        : i % 17 === 9 ? [{ to: `b${i - 7}`, when: '{{ again }}' }, { to: `b${i + 1}` }]
        : `b${i + 1}`;
      blocks.push({ id: `b${i}`, type: 'Set', next, ...(i % 23 === 5 ? { on_error: `b${Math.min(149, i + 2)}` } : {}) });
    }
    const r = await check({ diagram: 'branching', blocks });
    const labels = Object.values(r.edges).map((e) => e.label).filter((l): l is Box => !!l);
    const boxes = Object.values(r.nodes).map((p) => ({ ...p, width: NODE_WIDTH, height: NODE_HEIGHT }));
    for (let i = 0; i < labels.length; i++) {
      for (const b of boxes) expect(hit(labels[i], b), 'a label covers a block').toBe(false);
      for (let j = i + 1; j < labels.length; j++) expect(hit(labels[i], labels[j]), 'labels overlap').toBe(false);
    }
    expect(Object.keys(r.edges)).toHaveLength(diagramEdges({ diagram: 'branching', blocks }, keys).length);
    for (const [id, e] of Object.entries(r.edges)) {
      for (let i = 1; i < e.points.length; i++) {
        const a = e.points[i - 1];
        const b = e.points[i];
        expect(Math.abs(a.x - b.x) < 0.5 || Math.abs(a.y - b.y) < 0.5, `${id} segment ${i}`).toBe(true);
      }
    }
  }, 120_000);
});

describe('layout of a 200-block diagram', () => {
  const d = generated(200);
  let r: LayoutResult;
  it('places every block without overlaps', async () => {
    r = await check(d);
  }, 120_000);
  it('wraps the chain into rows: a fitted overview is about a screen in shape', () => {
    const xs = Object.values(r.nodes).map((p) => p.x);
    const ys = Object.values(r.nodes).map((p) => p.y);
    const width = Math.max(...xs) - Math.min(...xs) + NODE_WIDTH;
    const height = Math.max(...ys) - Math.min(...ys) + NODE_HEIGHT;
    expect(new Set(ys).size).toBeGreaterThan(5);
    expect(width / height).toBeGreaterThan(0.8);
    expect(width / height).toBeLessThan(4);
    // a single row of 200 blocks would be ~58 000 px wide
    expect(width).toBeLessThan(10_000);
  });
  it('routes every link, the loop back included, and no label covers a block or another label', () => {
    const ids = Object.keys(r.edges);
    expect(ids).toHaveLength(199 + 7 + 1);
    const back = r.edges['next:b199:0'];
    expect(back.points.length).toBeGreaterThanOrEqual(2);
    expect(back.label).toBeDefined();
    const labels = Object.values(r.edges).map((e) => e.label).filter((l): l is Box => !!l);
    expect(labels).toHaveLength(1 + 7 * 2);
    const blocks = Object.values(r.nodes).map((p) => ({ ...p, width: NODE_WIDTH, height: NODE_HEIGHT }));
    for (let i = 0; i < labels.length; i++) {
      for (const b of blocks) expect(hit(labels[i], b)).toBe(false);
      for (let j = i + 1; j < labels.length; j++) expect(hit(labels[i], labels[j])).toBe(false);
    }
  });
  it('puts the blocks of a run in a row, linked straight, like ELK puts a chain', () => {
    const { runs } = buildLayoutGraph(d, [], keys);
    for (const run of runs.values()) {
      for (let i = 1; i < run.length; i++) {
        expect(r.nodes[run[i]].y).toBe(r.nodes[run[i - 1]].y);
        expect(r.nodes[run[i]].x - r.nodes[run[i - 1]].x).toBe(NODE_WIDTH + 86);
        const link = r.edges[`next:${run[i - 1]}:0`].points;
        expect(link[0].y).toBe(link[link.length - 1].y);
      }
    }
  });
  it('keeps every link orthogonal', () => {
    for (const [id, e] of Object.entries(r.edges)) {
      for (let i = 1; i < e.points.length; i++) {
        const a = e.points[i - 1];
        const b = e.points[i];
        expect(Math.abs(a.x - b.x) < 0.5 || Math.abs(a.y - b.y) < 0.5, `${id} segment ${i}`).toBe(true);
      }
    }
  });
  it('routes the loop back around the blocks: no segment crosses a block', () => {
    const { points } = r.edges['next:b199:0'];
    const blocks = Object.values(r.nodes).map((p) => ({ ...p, width: NODE_WIDTH, height: NODE_HEIGHT }));
    for (let i = 1; i < points.length; i++) {
      const a = points[i - 1];
      const b = points[i];
      const seg = { x: Math.min(a.x, b.x) + 1, y: Math.min(a.y, b.y) + 1, width: Math.max(Math.abs(a.x - b.x) - 2, 0.5), height: Math.max(Math.abs(a.y - b.y) - 2, 0.5) };
      for (const blk of blocks) expect(hit(seg, blk), `segment ${i} crosses a block`).toBe(false);
    }
  });
});

describe('routeAround', () => {
  it('routes a link ELK left without a route from its source, past the blocks, into its target', () => {
    const result: LayoutResult = { nodes: { a: { x: 0, y: 0 }, b: { x: 300, y: 0 }, c: { x: 0, y: 200 } }, edges: {} };
    routeAround(result, [{ id: 'next:c:0', sources: ['c__next'], targets: ['a__in'], labels: [{ id: 'l', text: 'x', width: 30, height: 20 }] }], keys);
    const e = result.edges['next:c:0'];
    expect(e.points[0]).toEqual({ x: NODE_WIDTH, y: 200 + NODE_HEIGHT / 2 });
    expect(e.points[e.points.length - 1]).toEqual({ x: 0, y: NODE_HEIGHT / 2 });
    expect(Math.max(...e.points.map((p) => p.x))).toBeGreaterThan(300 + NODE_WIDTH);
    expect(e.label!.x).toBeGreaterThan(300 + NODE_WIDTH);
  });
});

describe('avoidWritten', () => {
  it('moves automatically placed blocks off blocks with a written position', async () => {
    const { avoidWritten } = await import('./layout');
    const layout = { nodes: { a: { x: 0, y: 0 }, b: { x: 300, y: 0 } }, edges: {} };
    const size = { width: NODE_WIDTH, height: NODE_HEIGHT };
    expect(avoidWritten(layout, { c: { x: 1000, y: 1000 } }, size)).toBe(layout);
    const moved = avoidWritten(layout, { c: { x: 10, y: 10 } }, size);
    expect(overlaps(moved.nodes.a, { x: 10, y: 10 })).toBe(false);
    expect(overlaps(moved.nodes.b, { x: 10, y: 10 })).toBe(false);
    expect(moved.nodes.b.x - moved.nodes.a.x).toBe(300);
  });
});
