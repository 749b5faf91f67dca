import { describe, expect, it } from 'vitest';
import { align, distribute, type Placed } from './align';

const box = (id: string, x: number, y: number, width = 100, height = 50): Placed => ({ id, x, y, width, height });
const boxes = [box('a', 0, 0), box('b', 300, 40, 200, 80), box('c', 120, 200)];

describe('align', () => {
  it('lines boxes up on the selection edges', () => {
    expect(align(boxes, 'left')).toEqual({ a: { x: 0, y: 0 }, b: { x: 0, y: 40 }, c: { x: 0, y: 200 } });
    expect(align(boxes, 'right')).toEqual({ a: { x: 400, y: 0 }, b: { x: 300, y: 40 }, c: { x: 400, y: 200 } });
    expect(align(boxes, 'top')).toEqual({ a: { x: 0, y: 0 }, b: { x: 300, y: 0 }, c: { x: 120, y: 0 } });
    expect(align(boxes, 'bottom')).toEqual({ a: { x: 0, y: 200 }, b: { x: 300, y: 170 }, c: { x: 120, y: 200 } });
  });

  it('centres on the selection middle', () => {
    expect(align(boxes, 'center')).toEqual({ a: { x: 200, y: 0 }, b: { x: 150, y: 40 }, c: { x: 200, y: 200 } });
    expect(align(boxes, 'middle')).toEqual({ a: { x: 0, y: 100 }, b: { x: 300, y: 85 }, c: { x: 120, y: 100 } });
  });

  it('leaves a single box alone', () => {
    expect(align([box('a', 5, 5)], 'left')).toEqual({});
  });
});

describe('distribute', () => {
  it('spreads the boxes between the first and the last with equal gaps', () => {
    const out = distribute([box('a', 0, 0), box('b', 50, 10), box('c', 600, 20)], 'horizontal');
    expect(out).toEqual({ a: { x: 0, y: 0 }, b: { x: 300, y: 10 }, c: { x: 600, y: 20 } });
    const v = distribute([box('a', 0, 0), box('b', 0, 400), box('c', 0, 100)], 'vertical');
    expect(v).toEqual({ a: { x: 0, y: 0 }, c: { x: 0, y: 200 }, b: { x: 0, y: 400 } });
  });

  it('keeps a least gap where the boxes have no room', () => {
    const out = distribute([box('a', 0, 0), box('b', 10, 0), box('c', 20, 0)], 'horizontal', 24);
    expect(out).toEqual({ a: { x: 0, y: 0 }, b: { x: 124, y: 0 }, c: { x: 248, y: 0 } });
  });
});
