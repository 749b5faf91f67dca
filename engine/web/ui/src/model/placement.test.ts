import { describe, expect, it } from 'vitest';
import { after, blockBox, freeSpot, groupShift, overlaps, PLACEMENT_GAP } from './placement';
import { NODE_HEIGHT, NODE_WIDTH } from './sizes';

const clear = (p: { x: number; y: number }, taken: ReturnType<typeof blockBox>[]) => taken.every((t) => !overlaps(blockBox(p), t));

describe('freeSpot', () => {
  it('gives the place asked for when it is free', () => {
    expect(freeSpot({ x: 500, y: 500 }, [blockBox({ x: 0, y: 0 })])).toEqual({ x: 500, y: 500 });
  });

  it('never puts a block over the only block, asked at its very place', () => {
    const start = blockBox({ x: 0, y: 0 });
    const p = freeSpot({ x: 0, y: 0 }, [start]);
    expect(overlaps(blockBox(p), start, PLACEMENT_GAP - 1)).toBe(false);
    // near: within a block's size and a gap
    expect(Math.hypot(p.x, p.y)).toBeLessThanOrEqual(NODE_WIDTH + 2 * PLACEMENT_GAP);
  });

  it('adds five blocks at the centre one after another without any two overlapping', () => {
    const taken = [blockBox({ x: 0, y: 0 })];
    for (let i = 0; i < 5; i++) {
      const p = freeSpot({ x: 0, y: 0 }, taken);
      expect(clear(p, taken)).toBe(true);
      taken.push(blockBox(p));
    }
    for (const a of taken) for (const b of taken) if (a !== b) expect(overlaps(a, b)).toBe(false);
  });

  it('prefers the right of a crowded place to its left', () => {
    const taken = [blockBox({ x: 0, y: 0 })];
    const p = freeSpot({ x: 10, y: 0 }, taken);
    expect(p.x).toBeGreaterThan(0);
  });

  it('finds room in a full grid, else below everything', () => {
    const taken = [];
    for (let i = 0; i < 20; i++) for (let j = 0; j < 20; j++) taken.push(blockBox({ x: i * (NODE_WIDTH + 10), y: j * (NODE_HEIGHT + 10) }));
    const p = freeSpot({ x: 1000, y: 500 }, taken);
    expect(clear(p, taken)).toBe(true);
  });

  it('places after a block to its right, clear of it', () => {
    const p = after({ x: 100, y: 40 });
    expect(p.y).toBe(40);
    expect(overlaps(blockBox(p), blockBox({ x: 100, y: 40 }))).toBe(false);
  });
});

describe('groupShift', () => {
  it('centres a pasted group at the pointer, keeping its layout', () => {
    const places = [{ x: 1000, y: 1000 }, { x: 1300, y: 1000 }];
    const s = groupShift(places, { x: 0, y: 500 }, []);
    const moved = places.map((p) => ({ x: p.x + s.x, y: p.y + s.y }));
    expect(moved[1].x - moved[0].x).toBe(300);
    expect(moved[0].y).toBe(moved[1].y);
    const centre = (moved[0].x + moved[1].x + NODE_WIDTH) / 2;
    expect(Math.abs(centre - 0)).toBeLessThanOrEqual(1);
  });

  it('moves the whole group clear of the blocks already at the pointer', () => {
    const taken = [blockBox({ x: -110, y: 462 }), blockBox({ x: 200, y: 462 })];
    const places = [{ x: 0, y: 0 }, { x: 0, y: 120 }];
    const s = groupShift(places, { x: 0, y: 500 }, taken);
    for (const p of places) expect(clear({ x: p.x + s.x, y: p.y + s.y }, taken)).toBe(true);
  });
});
