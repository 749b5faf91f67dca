import { describe, expect, it } from 'vitest';
import type { Diagram, RunData } from '../../api/types';
import { linkKeys } from '../../model/format';
import { format, keys, loopDiagram, orderAgent, palette } from '../../test/fixtures';
import { handleEnd } from './handles';
import { createCanvasMapping, draggingOnlyChanged, movedBy, type CanvasInput } from './mapping';
import type { BlockNodeType, GroupNodeType } from './types';

const layout = (d: Diagram) => ({
  nodes: Object.fromEntries(d.blocks.map((b, i) => [b.id, { x: i * 300, y: 10 }])),
  edges: {},
});

function input(diagram: Diagram | null, extra: Partial<CanvasInput> = {}): CanvasInput {
  return {
    diagram, compiled: null, layout: diagram ? layout(diagram) : null, palette, links: keys, problems: [], selection: [],
    selectedEdge: null, run: null, dragging: null, overview: false, ...extra,
  };
}

const byId = (nodes: BlockNodeType[]) => new Map(nodes.map((n) => [n.id, n]));

function run(extra: Partial<RunData> = {}): RunData {
  const step = (block: string, status = 'succeeded') => ({
    number: 1, block, block_type: 'Set', offset_ms: 0, duration_ms: 1, status, next: null, via: null, inputs: {}, outputs: {},
    set: {}, error: null, model: null, tokens: null, called_tools: [], payloads: [], scores: {}, score_parts: {}, failed_tools: [], http_calls: [], passages: [],
    cost: null, usage: null, cached: false,
  });
  return {
    run_id: 'r1', diagram: 'order_agent.yaml', status: 'succeeded', errors: [], blocks: ['start', 'ask', 'dispatch', 'done'],
    links: [['start', 'ask'], ['ask', 'dispatch'], ['dispatch', 'ask'], ['ask', 'done']], failed: null, passes: {},
    steps: [step('start'), step('ask'), step('dispatch'), step('ask'), step('done')], events: [], count: 12, variables: null,
    waiting: null, checkpointed: false, replay_of: null, session: null, ...extra,
  };
}

describe('the canvas mapping: blocks to nodes', () => {
  it('places a block where the file says, else where the layout put it; one with neither stays hidden', () => {
    const d = orderAgent();
    d.blocks[1] = { ...d.blocks[1], position: [5, 6] };
    const lay = layout(d);
    delete (lay.nodes as Record<string, unknown>).done;
    const { blocks, placed } = createCanvasMapping()(input(d, { layout: lay }));
    const nodes = byId(blocks);
    expect(nodes.get('ask')!.position).toEqual({ x: 5, y: 6 });
    expect(nodes.get('dispatch')!.position).toEqual({ x: 600, y: 10 });
    expect(nodes.get('done')!.hidden).toBe(true);
    expect(placed).toBe(false);
    expect(blocks.map((n) => n.id)).toEqual(['start', 'ask', 'dispatch', 'apologise', 'done']);
  });
  it('shows nothing before the link keys are known (a block\'s handles are named by them)', () => {
    const { blocks, edges, placed } = createCanvasMapping()(input(orderAgent(), { links: null }));
    expect(blocks.every((n) => n.hidden)).toBe(true);
    expect(edges).toEqual([]);
    expect(placed).toBe(false);
  });
  it('gives each block its handles from the format and its type: next, error, the type\'s own ports', () => {
    const { blocks } = createCanvasMapping()(input(loopDiagram()));
    const each = byId(blocks).get('each')!.data;
    expect([each.nextKey, each.errorKey, each.ports]).toEqual(['next', 'on_error', ['body']]);
    expect(byId(blocks).get('tag')!.data.ports).toEqual([]);
    expect(byId(blocks).get('start')!.data.isStart).toBe(true);
  });
  it('declares where each block\'s handles are, so a link\'s ends never wait for the page to be measured', () => {
    const { blocks } = createCanvasMapping()(input(loopDiagram()));
    const handles = (id: string) => byId(blocks).get(id)!.handles!.map((h) => [h.id, h.type, h.position, h.x, +h.y.toFixed(2)]);
    // a 10-px square centred on the inner edge of the frame (a 4-px border on the left, 1 px elsewhere): next, then
    // the ports, at 1/(n+1), 2/(n+1)... of the inner height, rounded to a whole per cent as BlockNode places them;
    // the figures the page measures (a browser test compares the two)
    expect(handles('each')).toEqual([
      ['in', 'target', 'left', -1, 33], ['next', 'source', 'right', 214, 20.42],
      ['body', 'source', 'right', 214, 45.58], ['on_error', 'source', 'bottom', 106.5, 70]]);
    expect(handles('start').map((h) => h[0])).toEqual(['next', 'on_error']); // a start block has no input
    // where a link meets them: a handle box's outer edge, as React Flow puts a link's end
    const each = byId(blocks).get('each')!;
    expect(handleEnd(each.handles, 'body', { x: 100, y: 200 })).toMatchObject({ x: 324, position: 'right' });
    expect(handleEnd(each.handles, 'body', { x: 100, y: 200 })!.y).toBeCloseTo(250.58, 6);
    expect(handleEnd(each.handles, 'in', { x: 100, y: 200 })).toEqual({ x: 99, y: 238, position: 'left' });
    expect(handleEnd(each.handles, 'on_error', { x: 0, y: 0 })).toEqual({ x: 111.5, y: 80, position: 'bottom' });
    expect(handleEnd(each.handles, 'nowhere', { x: 0, y: 0 })).toBeNull();
  });
  it('draws every block as a tile when zoomed out past reading, keeping its handles for its links', () => {
    const map = createCanvasMapping();
    const d = orderAgent();
    const near = byId(map(input(d)).blocks);
    const far = byId(map(input(d, { overview: true })).blocks);
    for (const [id, node] of far) {
      expect(node.data.overview).toBe(true);
      expect(near.get(id)!.data.overview).toBe(false);
      expect(node.handles).toEqual(near.get(id)!.handles);
    }
  });
  it('marks the selection, the problems of each block and the types the palette does not have', () => {
    const d = orderAgent();
    const problem = { file: null, line: 3, column: 1, block: 'ask', field: 'with.temperature', message: 'too hot', hint: 'at most 1',
      code: 'invalid', severity: 'error' as const };
    const { blocks } = createCanvasMapping()(input(d, {
      selection: ['dispatch'], problems: [problem, { ...problem, severity: 'warning', message: 'unused' }],
      palette: palette.filter((t) => t.type !== 'ToolDispatch'),
    }));
    const nodes = byId(blocks);
    expect(nodes.get('dispatch')!.selected).toBe(true);
    expect(nodes.get('ask')!.selected).toBe(false);
    expect(nodes.get('ask')!.data).toMatchObject({ errors: 1, warnings: 1, firstProblem: 'too hot — at most 1' });
    expect(nodes.get('ask')!.ariaLabel).toBe('ClaudeRequest block ask (Ask Claude), 1 errors');
    expect(nodes.get('dispatch')!.data.unknownType).toBe(true);
    expect(nodes.get('ask')!.data.unknownType).toBe(false);
  });
  it('keeps a node\'s measured size when it rebuilds the node for a new look (a problem arrived, a link was added)', () => {
    // React Flow forgets the handle positions of a node handed over without `measured` until it measures it again,
    // a frame or more later; a link drag that starts on it meanwhile never begins (the flaky connect() of issue 25).
    const map = createCanvasMapping();
    const d = orderAgent();
    const before = byId(map(input(d)).blocks).get('ask')!;
    const problem = { file: null, line: 3, column: 1, block: 'ask', field: null, message: 'unreachable', hint: null,
      code: 'unreachable', severity: 'warning' as const };
    const after = byId(map(input(d, { problems: [problem] })).blocks).get('ask')!;
    expect(after).not.toBe(before);
    expect(after.data).not.toBe(before.data);
    for (const node of [before, after]) expect(node.measured).toEqual({ width: node.width, height: node.height });
  });
  it('marks what a run did: blocks run (with their steps), the failed one, the ones skipped', () => {
    const { blocks } = createCanvasMapping()(input(orderAgent(), { run: run({ status: 'failed', failed: 'done' }) }));
    const nodes = byId(blocks);
    expect(nodes.get('ask')!.data).toMatchObject({ run: 'ok', steps: 2 });
    expect(nodes.get('done')!.data.run).toBe('failed');
    expect(nodes.get('apologise')!.data.run).toBe('skipped');
    const idle = createCanvasMapping()(input(orderAgent()));
    expect(byId(idle.blocks).get('ask')!.data.run).toBeNull();
  });
  it('puts each request block\'s cost on its node: the sum of its steps (a loop\'s too, with the count), unknown as such', () => {
    const base = run();
    const priced = (usd: number | null, input: number, output: number) => ({ model: 'claude-sonnet-4-5', tokens: [input, output] as [number, number],
      usage: { input_tokens: input, output_tokens: output }, cost: { usd } });
    const steps = base.steps.map((s, i) => (i === 1 ? { ...s, ...priced(0.0012, 1000, 50) } : i === 3 ? { ...s, ...priced(0.0006, 500, 10) } : s));
    const { blocks } = createCanvasMapping()(input(orderAgent(), { run: { ...base, steps } }));
    const ask = byId(blocks).get('ask')!.data.cost!;
    expect(ask).toMatchObject({ text: '$0.0018 · 2 calls', state: 'known' });
    expect(ask.title).toBe('$0.0018 — 2 requests; tokens in 1,500 · out 60');
    expect(byId(blocks).get('dispatch')!.data.cost).toBeUndefined();  // no request: no badge, never "$0"

    const unknown = steps.map((s, i) => (i === 3 ? { ...s, cost: { usd: null } } : s));
    const partly = byId(createCanvasMapping()(input(orderAgent(), { run: { ...base, steps: unknown } })).blocks).get('ask')!.data.cost!;
    expect(partly).toMatchObject({ text: '≥ $0.0012 · 2 calls', state: 'partial' });
    const none = unknown.map((s, i) => (i === 1 ? { ...s, cost: null } : s));
    expect(byId(createCanvasMapping()(input(orderAgent(), { run: { ...base, steps: none } })).blocks).get('ask')!.data.cost)
      .toMatchObject({ text: 'cost unknown · 2 calls', state: 'unknown' });
    expect(byId(createCanvasMapping()(input(orderAgent())).blocks).get('ask')!.data.cost).toBeUndefined();
  });
  it('draws a block being dragged where the drag has it, before the document has it', () => {
    const d = orderAgent();
    const { blocks } = createCanvasMapping()(input(d, { dragging: { ask: { x: 42, y: 43 } } }));
    expect(byId(blocks).get('ask')).toMatchObject({ position: { x: 42, y: 43 }, dragging: true });
    expect(byId(blocks).get('done')!.dragging).toBe(false);
  });
});

describe('the canvas mapping remembers', () => {
  it('keeps the node of every block whose look did not change, and its data when only its place did', () => {
    const map = createCanvasMapping();
    const d = orderAgent();
    const first = map(input(d));
    // a layout that places every block as before (another object) changes no node
    const same = map(input(d, { layout: layout(d) }));
    expect(same.blocks).toBe(first.blocks);
    expect(same.nodes).toBe(first.nodes);
    const dragged = map(input(d, { dragging: { ask: { x: 1, y: 2 } } }));
    const before = byId(first.blocks);
    const after = byId(dragged.blocks);
    for (const id of ['start', 'dispatch', 'apologise', 'done']) expect(after.get(id)).toBe(before.get(id));
    expect(after.get('ask')).not.toBe(before.get('ask'));
    expect(after.get('ask')!.data).toBe(before.get('ask')!.data);
  });
  it('builds the links again only when what they are drawn from changes, not during a drag', () => {
    const map = createCanvasMapping();
    const d = orderAgent();
    const placed = layout(d);
    const first = map(input(d, { layout: placed }));
    expect(map(input(d, { layout: placed, dragging: { ask: { x: 1, y: 2 } } })).edges).toBe(first.edges);
    expect(map(input(d, { layout: placed, selectedEdge: 'next:ask:0' })).edges).not.toBe(first.edges);
  });
  it('draws a block again when the document changes it', () => {
    const map = createCanvasMapping();
    const d = orderAgent();
    const first = byId(map(input(d)).blocks);
    const renamed = { ...d, blocks: d.blocks.map((b) => (b.id === 'ask' ? { ...b, label: 'Ask' } : b)) };
    const second = byId(map(input(renamed)).blocks);
    expect(second.get('ask')!.data.block.label).toBe('Ask');
    expect(second.get('done')).toBe(first.get('done'));
  });
});

describe('the canvas mapping during a drag', () => {
  it('names the blocks a new drag moves, picks up or lets go, and no other', () => {
    expect(movedBy(null, null)).toEqual(new Set());
    expect(movedBy(null, { a: { x: 1, y: 2 } })).toEqual(new Set(['a']));
    expect(movedBy({ a: { x: 1, y: 2 }, b: { x: 0, y: 0 } }, { a: { x: 1, y: 2 }, b: { x: 0, y: 4 } })).toEqual(new Set(['b']));
    expect(movedBy({ a: { x: 1, y: 2 } }, null)).toEqual(new Set(['a']));
    expect(movedBy({ a: { x: 1, y: 2 } }, { b: { x: 1, y: 2 } })).toEqual(new Set(['a', 'b']));
  });
  it('looks at the blocks again only when nothing but the drag changed', () => {
    const d = orderAgent();
    const a = input(d);
    expect(draggingOnlyChanged(a, { ...a, dragging: { ask: { x: 1, y: 1 } } })).toBe(true);
    expect(draggingOnlyChanged(a, { ...a, selection: ['ask'] })).toBe(false);
    expect(draggingOnlyChanged(a, { ...a, diagram: { ...d } })).toBe(false);
  });
  it('draws each frame of a drag as a fresh mapping of the same input would, and the drop as the document has it', () => {
    const d = orderAgent();
    const placed = layout(d);
    const problem = { file: null, line: 3, column: 1, block: 'ask', field: null, message: 'unreachable', hint: null,
      code: 'unreachable', severity: 'warning' as const };
    const base = input(d, { layout: placed, selection: ['ask', 'done'], problems: [problem] });
    const map = createCanvasMapping();
    map(base);
    const frames: Array<CanvasInput['dragging']> = [
      { ask: { x: 10, y: 20 }, done: { x: 900, y: 30 } },
      { ask: { x: 14, y: 24 }, done: { x: 904, y: 34 } },
      { ask: { x: 14, y: 24 }, done: { x: 904, y: 34 } },
      { ask: { x: 18, y: 28 } },
      null,
    ];
    for (const dragging of frames) {
      const seen = map({ ...base, dragging });
      const fresh = createCanvasMapping()({ ...base, dragging });
      expect(seen.nodes).toEqual(fresh.nodes);
      expect(seen.edges).toEqual(fresh.edges);
    }
    // the drop: the document has the new places and the drag is over
    const moved = { ...d, blocks: d.blocks.map((b) => (b.id === 'ask' ? { ...b, position: [18, 28] as [number, number] } : b)) };
    const dropped = map({ ...base, diagram: moved, dragging: null });
    expect(byId(dropped.blocks).get('ask')).toMatchObject({ position: { x: 18, y: 28 }, dragging: false });
    expect(dropped.nodes).toEqual(createCanvasMapping()({ ...base, diagram: moved, dragging: null }).nodes);
  });
});

describe('the canvas mapping: links to edges', () => {
  it('draws every link from its key\'s handle, next links in order with their labels', () => {
    const { edges } = createCanvasMapping()(input(orderAgent()));
    expect(edges.map((e) => [e.id, e.source, e.target, e.sourceHandle, e.data!.look])).toEqual([
      ['next:start:0', 'start', 'ask', 'next', 'next'],
      ['next:ask:0', 'ask', 'dispatch', 'next', 'next'],
      ['next:ask:1', 'ask', 'done', 'next', 'next'],
      ['error:ask', 'ask', 'apologise', 'on_error', 'error'],
      ['next:dispatch:0', 'dispatch', 'ask', 'next', 'next'],
    ]);
    const ask = edges.filter((e) => e.source === 'ask').map((e) => e.data!.label);
    expect(ask).toEqual(['1 · called_tools | length > 0', '2 · otherwise', '']);
    expect(edges.every((e) => e.targetHandle === 'in')).toBe(true);
  });
  it('draws a Loop\'s body link from its port, and a box around the blocks its body runs', () => {
    const { edges, nodes } = createCanvasMapping()(input(loopDiagram()));
    expect(edges.find((e) => e.id === 'body:each')).toMatchObject({ sourceHandle: 'body', data: { look: 'port', kind: 'body' } });
    const [group] = nodes.filter((n): n is GroupNodeType => n.type === 'loopGroup');
    expect(group.id).toBe('group:each');
    expect(nodes.indexOf(group)).toBe(0); // drawn below the blocks
    // around classify (x 600) and tag (x 900), with the padding
    expect(group.position.x).toBeLessThan(600);
    expect(group.position.x + (group.width ?? 0)).toBeGreaterThan(900 + 220);
  });
  it('lights the links a run took and dims the others', () => {
    const { edges } = createCanvasMapping()(input(orderAgent(), { run: run() }));
    expect(edges.filter((e) => e.data!.taken).map((e) => e.id)).toEqual(['next:start:0', 'next:ask:0', 'next:ask:1', 'next:dispatch:0']);
    expect(edges.filter((e) => e.data!.dimmed).map((e) => e.id)).toEqual(['error:ask']);
  });
  it('reads the links under the keys the server names', () => {
    const other = linkKeys({ ...format, links: { next: 'then', error: 'rescue', target: 'go', condition: 'if' } }, palette);
    const d: Diagram = { diagram: 'x', blocks: [
      { id: 'a', type: 'Set', then: [{ go: 'b', if: '{{ x }}' }, { go: 'c' }], rescue: 'c' },
      { id: 'b', type: 'Set', next: 'c' }, { id: 'c', type: 'Set' }] };
    const { edges, blocks } = createCanvasMapping()(input(d, { links: other }));
    expect(edges.map((e) => [e.id, e.sourceHandle, e.data!.when])).toEqual([
      ['next:a:0', 'then', '{{ x }}'], ['next:a:1', 'then', null], ['error:a', 'rescue', null]]);
    expect(byId(blocks).get('a')!.data).toMatchObject({ nextKey: 'then', errorKey: 'rescue' });
  });
});
