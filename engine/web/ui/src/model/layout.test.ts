import { describe, expect, it } from 'vitest';
import { layoutDiagram } from './layout';
import { loopBodies } from './graph';
import { loopDiagram, orderAgent } from '../test/fixtures';
import { NODE_HEIGHT, NODE_WIDTH } from './sizes';
import type { Diagram } from '../api/types';

function overlaps(a: { x: number; y: number }, b: { x: number; y: number }): boolean {
  return a.x < b.x + NODE_WIDTH && b.x < a.x + NODE_WIDTH && a.y < b.y + NODE_HEIGHT && b.y < a.y + NODE_HEIGHT;
}

async function check(d: Diagram) {
  const result = await layoutDiagram(d, loopBodies(d, null));
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
    const r = await layoutDiagram(d, []);
    const labels = Object.values(r.edges).map((e) => e.label).filter((l): l is NonNullable<typeof l> => !!l);
    for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++) {
      const a = labels[i]; const b = labels[j];
      const hit = a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
      expect(hit).toBe(false);
    }
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
