import { describe, expect, it } from 'vitest';
import type { Diagram } from '../api/types';
import { blockHandles, handleEnd } from '../components/canvas/handles';
import { linkRoutes } from '../components/canvas/mapping';
import { IN_PORT } from './layout';
import { placeLabel } from './route';
import { keys, orderAgent } from '../test/fixtures';
import type { Point, Rect } from './route';
import { NODE_HEIGHT, NODE_WIDTH } from './sizes';

const rect = (p: { x: number; y: number }): Rect => ({ x: p.x, y: p.y, width: NODE_WIDTH, height: NODE_HEIGHT });

/** Whether a segment passes through a block's inside (touching its border where a link enters is allowed). */
function through(a: Point, b: Point, r: Rect): boolean {
  const inset = 2;
  return Math.min(a.x, b.x) < r.x + r.width - inset && Math.max(a.x, b.x) > r.x + inset
    && Math.min(a.y, b.y) < r.y + r.height - inset && Math.max(a.y, b.y) > r.y + inset;
}

function overlaps(a: Rect, b: Rect): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

describe('links routed around blocks (issue 29, item 7)', () => {
  it('routes the back link from dispatch to ask around the block between them, with placed and auto-placed blocks mixed', () => {
    const d = orderAgent();
    // ask and dispatch are placed in the file; done sits between them on the way back, placed by the layout
    d.blocks = d.blocks.map((b) => (b.id === 'ask' ? { ...b, position: [0, 0] } : b.id === 'dispatch' ? { ...b, position: [600, 0] } : b));
    const layout = { nodes: { start: { x: -400, y: 0 }, done: { x: 300, y: 0 }, apologise: { x: 0, y: 300 } }, edges: {} };
    const routes = linkRoutes(d, keys, layout);
    const back = routes.get('next:dispatch:0')!;
    const places: Record<string, { x: number; y: number }> = { ...layout.nodes, ask: { x: 0, y: 0 }, dispatch: { x: 600, y: 0 } };
    for (const [id, p] of Object.entries(places)) {
      if (id === 'ask' || id === 'dispatch') continue;
      back.points.slice(1).forEach((q, i) => expect(through(back.points[i], q, rect(p)), `crosses ${id}`).toBe(false));
    }
    // every label clear of every block
    for (const route of routes.values()) {
      if (route.label) for (const p of Object.values(places)) expect(overlaps(route.label, rect(p))).toBe(false);
    }
    // the route's segments are orthogonal
    back.points.slice(1).forEach((q, i) => expect(q.x === back.points[i].x || q.y === back.points[i].y).toBe(true));
  });

  it('routes a link back to the block just before it round both blocks, not through them', () => {
    const d = orderAgent();
    // ask and dispatch side by side, nothing between: the way back is not a straight line through both
    const at: Record<string, [number, number]> = { start: [-400, 0], ask: [0, 0], dispatch: [300, 0], done: [600, 200], apologise: [0, 300] };
    d.blocks = d.blocks.map((b) => ({ ...b, position: at[b.id] }));
    const back = linkRoutes(d, keys, null).get('next:dispatch:0')!;
    for (const id of ['ask', 'dispatch']) {
      const r = rect({ x: at[id][0], y: at[id][1] });
      back.points.slice(1).forEach((q, i) => expect(through(back.points[i], q, r), `crosses ${id}: ${JSON.stringify(back.points)}`).toBe(false));
    }
    back.points.slice(1).forEach((q, i) => expect(q.x === back.points[i].x || q.y === back.points[i].y).toBe(true));
  });

  it('keeps the labels of two links that share their way apart, and off every block', () => {
    const d = orderAgent();
    // as built on the canvas in the browser test: dispatch up and done down to the right of ask, start below them
    const at: Record<string, [number, number]> = { ask: [0, 0], dispatch: [330, -40], done: [330, 150], start: [170, 250], apologise: [0, 500] };
    d.blocks = d.blocks.map((b) => ({ ...b, position: at[b.id] }));
    const labels = [...linkRoutes(d, keys, null).values()].flatMap((r) => (r.label ? [r.label] : []));
    expect(labels.length).toBe(2);
    expect(overlaps(labels[0], labels[1]), JSON.stringify(labels)).toBe(false);
    for (const l of labels) for (const p of Object.values(at)) expect(overlaps(l, rect({ x: p[0], y: p[1] }))).toBe(false);
  });

  it('starts and ends each route exactly where the canvas declares the handles (one geometry, model/handles)', () => {
    const d = orderAgent();
    const at: Record<string, [number, number]> = { start: [-400, 0], ask: [0, 0], dispatch: [300, -40], done: [300, 150], apologise: [0, 300] };
    d.blocks = d.blocks.map((b) => ({ ...b, position: at[b.id] }));
    const routes = linkRoutes(d, keys, null);
    const handlesOf = (id: string) => blockHandles(id === 'start', keys.next, [], keys.error);
    const place = (id: string) => ({ x: at[id][0], y: at[id][1] });
    const checked = [
      ['next:start:0', 'start', keys.next, 'ask'], ['next:ask:0', 'ask', keys.next, 'dispatch'], ['next:ask:1', 'ask', keys.next, 'done'],
      ['next:dispatch:0', 'dispatch', keys.next, 'ask'], ['error:ask', 'ask', keys.error, 'apologise'],
    ] as const;
    for (const [id, from, handle, to] of checked) {
      const points = routes.get(id)!.points;
      const start = handleEnd(handlesOf(from), handle, place(from))!;
      const end = handleEnd(handlesOf(to), IN_PORT, place(to))!;
      expect(points[0], id).toEqual({ x: start.x, y: start.y });
      expect(points[points.length - 1], id).toEqual({ x: end.x, y: end.y });
    }
  });

  it('draws a link to its own block over the block, never as a stub (issue 29, item 6)', () => {
    const d: Diagram = { diagram: 'd', blocks: [{ id: 'start', type: 'Start', next: 'done', position: [0, 0] },
      { id: 'done', type: 'Set', next: [{ to: 'done', when: '{{ n < 3 }}' }], position: [400, 0] }] };
    const loop = linkRoutes(d, keys, null).get('next:done:0')!;
    const xs = loop.points.map((p) => p.x);
    const ys = loop.points.map((p) => p.y);
    expect(Math.max(...xs) - Math.min(...xs)).toBeGreaterThan(NODE_WIDTH);
    expect(Math.min(...ys)).toBeLessThan(0); // over the block's top
    expect(overlaps(loop.label!, rect({ x: 400, y: 0 }))).toBe(false);
  });
});

describe('links routed around blocks on a large placed diagram', () => {
  it('routes every link of a 300-block grid clear of the blocks it does not leave or enter', () => {
    const blocks: Diagram['blocks'] = [];
    for (let i = 0; i < 300; i++) {
      const next = i === 299 ? null : i % 25 === 0 ? [{ to: `b${i + 2}`, when: '{{ x }}' }, { to: `b${i + 1}` }] : `b${i + 1}`;
      blocks.push({ id: `b${i}`, type: 'Set', next, position: [(i % 10) * 300, Math.floor(i / 10) * 140] });
    }
    const place = (id: string) => { const i = Number(id.slice(1)); return rect({ x: (i % 10) * 300, y: Math.floor(i / 10) * 140 }); };
    const routes = linkRoutes({ diagram: 'grid', blocks }, keys, null);
    expect(routes.size).toBe(311);
    for (const [id, route] of routes) {
      const [, source] = id.split(':');
      const target = blocks.find((b) => b.id === source)!.next;
      const ends = new Set([source, ...(typeof target === 'string' ? [target] : (target ?? []).map((l) => l.to))]);
      for (const b of blocks) {
        if (ends.has(b.id)) continue;
        route.points.slice(1).forEach((q, i) => expect(through(route.points[i], q, place(b.id)), `${id} crosses ${b.id}`).toBe(false));
      }
    }
  });
});

describe('placeLabel after blocks moved close around a link (issue 43)', () => {
  it('puts the label on a part of the link clear of the block', () => {
    // a block moved over the middle of a link: its label goes near an end, clear of it
    const points = [{ x: 0, y: 100 }, { x: 400, y: 100 }];
    const blocks = [{ x: 100, y: 60, width: 200, height: 80 }];
    const label = placeLabel(points, 60, blocks);
    const hit = (b: { x: number; y: number; width: number; height: number }) =>
      label.x < b.x + b.width && b.x < label.x + label.width && label.y < b.y + b.height && b.y < label.y + label.height;
    expect(blocks.some(hit)).toBe(false);
  });
});
