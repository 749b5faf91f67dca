import { describe, expect, it } from 'vitest';
import { NODE_HEIGHT, NODE_WIDTH } from '../../model/sizes';
import { keys, orderAgent, palette } from '../../test/fixtures';
import { fittedViewport, READABLE_ZOOM, withLinks } from './fit';
import { createCanvasMapping } from './mapping';

// the order agent's blocks in one row, 300 apart: the back-link dispatch → ask must leave the row to go round them
function picture() {
  const d = orderAgent();
  const layout = { nodes: Object.fromEntries(d.blocks.map((b, i) => [b.id, { x: i * 300, y: 10 }])), edges: {} };
  return createCanvasMapping()({
    diagram: d, compiled: null, layout, palette, links: keys, problems: [], selection: [], selectedEdge: null, run: null,
    dragging: null, overview: false,
  });
}
const blocksBox = { x: 0, y: 10, width: 4 * 300 + NODE_WIDTH, height: NODE_HEIGHT };

describe('fit to view: the box it fits', () => {
  it('takes in every link routed round the blocks, so none runs past the pane', () => {
    const { edges } = picture();
    const back = edges.find((e) => e.source === 'dispatch' && e.target === 'ask')!.data!.route!;
    const box = withLinks(blocksBox, edges);
    expect(Math.min(...back.points.map((p) => p.y)) < blocksBox.y || Math.max(...back.points.map((p) => p.y)) > blocksBox.y + blocksBox.height).toBe(true);
    for (const e of edges) {
      for (const p of e.data!.route!.points) {
        expect(p.x).toBeGreaterThanOrEqual(box.x);
        expect(p.x).toBeLessThanOrEqual(box.x + box.width);
        expect(p.y).toBeGreaterThanOrEqual(box.y);
        expect(p.y).toBeLessThanOrEqual(box.y + box.height);
      }
    }
    expect(box.height).toBeGreaterThan(blocksBox.height);
  });
  it('takes in a link\'s label box, and is the blocks\' box where every link lies inside it', () => {
    const label = { x: -40, y: 500, width: 30, height: 20 };
    const inside = { points: [{ x: 10, y: 20 }, { x: 100, y: 20 }] };
    const edge = (route: object) => ({ id: 'e', source: 'a', target: 'b', data: { route } }) as never;
    expect(withLinks(blocksBox, [edge(inside)])).toEqual(blocksBox);
    expect(withLinks(blocksBox, [edge({ ...inside, label })])).toEqual({ x: -40, y: 10, width: blocksBox.width + 40, height: 510 });
  });
});

describe('fittedViewport', () => {
  const pane = { width: 400, height: 600, minZoom: 0.05 };
  it('fits a small diagram no smaller than readable, centred', () => {
    const box = { x: 0, y: 0, width: 2000, height: 100 };
    const v = fittedViewport(box, pane, 7, 0.15, 1.1);
    expect(v.zoom).toBe(READABLE_ZOOM);
    expect(v.x + (box.x + box.width / 2) * v.zoom).toBeCloseTo(200);
    expect(v.y + (box.y + box.height / 2) * v.zoom).toBeCloseTo(300);
  });
  it('fits a large diagram whole, as an overview', () => {
    const v = fittedViewport({ x: 0, y: 0, width: 8000, height: 4000 }, pane, 300, 0.15, 1.1);
    expect(v.zoom).toBeLessThan(READABLE_ZOOM);
  });
  it('leaves a fit that is readable as it is', () => {
    const v = fittedViewport({ x: 0, y: 0, width: 300, height: 100 }, pane, 2, 0.15, 1.1);
    expect(v.zoom).toBeGreaterThan(READABLE_ZOOM);
  });
});
