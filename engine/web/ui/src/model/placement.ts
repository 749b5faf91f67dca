/**
 * Where a new block (or a pasted group) goes: the free place nearest to where it was asked for, never over another
 * block's box. Pure geometry over the boxes already on the canvas; the callers choose the place asked for (after the
 * selected block, beside the link it continues, at a handle, at the pointer, at the view's centre).
 */
import { NODE_HEIGHT, NODE_WIDTH } from './sizes';

export interface Box { x: number; y: number; width: number; height: number }
export interface XY { x: number; y: number }

/** The room kept between two blocks. */
export const PLACEMENT_GAP = 32;
/** How far from the asked place the search goes, in steps of half a block (then it gives the far side of everything). */
const RINGS = 24;

/** Whether `a` and `b` overlap, or come closer than `gap`. */
export function overlaps(a: Box, b: Box, gap = 0): boolean {
  return a.x < b.x + b.width + gap && b.x < a.x + a.width + gap && a.y < b.y + b.height + gap && b.y < a.y + a.height + gap;
}

/** The box around every box of `boxes` (empty: a point at 0, 0). */
export function bounds(boxes: readonly Box[]): Box {
  if (!boxes.length) return { x: 0, y: 0, width: 0, height: 0 };
  const left = Math.min(...boxes.map((b) => b.x));
  const top = Math.min(...boxes.map((b) => b.y));
  const right = Math.max(...boxes.map((b) => b.x + b.width));
  const bottom = Math.max(...boxes.map((b) => b.y + b.height));
  return { x: left, y: top, width: right - left, height: bottom - top };
}

/**
 * The shift nearest to none (in steps of half a block, right and down preferred to left and up) that puts every box
 * of `group` clear of every box of `taken` by `gap`. Tried in order of distance, stopped at the first that is clear.
 */
export function freeShift(group: readonly Box[], taken: readonly Box[], gap = PLACEMENT_GAP): XY {
  if (!group.length) return { x: 0, y: 0 };
  const whole = bounds(group);
  // only the boxes near enough to matter are looked at for each try
  const reach = { x: whole.x - RINGS * NODE_WIDTH, y: whole.y - RINGS * NODE_HEIGHT,
    width: whole.width + 2 * RINGS * NODE_WIDTH, height: whole.height + 2 * RINGS * NODE_HEIGHT };
  const near = taken.filter((t) => overlaps(t, reach, gap));
  const clear = (dx: number, dy: number) => {
    const moved = { x: whole.x + dx, y: whole.y + dy, width: whole.width, height: whole.height };
    const hit = near.filter((t) => overlaps(moved, t, gap));
    return hit.length === 0 || group.every((g) => !hit.some((t) => overlaps({ ...g, x: g.x + dx, y: g.y + dy }, t, gap)));
  };
  if (clear(0, 0)) return { x: 0, y: 0 };
  const sx = (NODE_WIDTH + PLACEMENT_GAP) / 2;
  const sy = (NODE_HEIGHT + PLACEMENT_GAP) / 2;
  const tries: Array<{ dx: number; dy: number; cost: number }> = [];
  for (let i = -RINGS; i <= RINGS; i++) {
    for (let j = -RINGS; j <= RINGS; j++) {
      if (!i && !j) continue;
      const dx = i * sx;
      const dy = j * sy;
      // a step left or up counts a little more: new work reads left to right, top to bottom
      tries.push({ dx, dy, cost: Math.hypot(dx * (i < 0 ? 1.15 : 1), dy * (j < 0 ? 1.1 : 1)) });
    }
  }
  tries.sort((a, b) => a.cost - b.cost);
  for (const t of tries) if (clear(t.dx, t.dy)) return { x: t.dx, y: t.dy };
  // everything near is taken: below everything
  const all = bounds(taken);
  return { x: 0, y: all.y + all.height + gap - whole.y };
}

/** The free place nearest to `want` for one block (`want` its top-left corner). */
export function freeSpot(want: XY, taken: readonly Box[], size = { width: NODE_WIDTH, height: NODE_HEIGHT }, gap = PLACEMENT_GAP): XY {
  const shift = freeShift([{ x: want.x, y: want.y, ...size }], taken, gap);
  return { x: Math.round(want.x + shift.x), y: Math.round(want.y + shift.y) };
}

/**
 * Where a group of `places` (each a block's top-left corner, kept relative to each other) goes to be centred at
 * `centre` and clear of `taken`: the shift to add to each place.
 */
export function groupShift(places: readonly XY[], centre: XY, taken: readonly Box[], gap = PLACEMENT_GAP): XY {
  const boxes = places.map((p) => ({ x: p.x, y: p.y, width: NODE_WIDTH, height: NODE_HEIGHT }));
  const whole = bounds(boxes);
  const to = { x: Math.round(centre.x - whole.width / 2 - whole.x), y: Math.round(centre.y - whole.height / 2 - whole.y) };
  const shift = freeShift(boxes.map((b) => ({ ...b, x: b.x + to.x, y: b.y + to.y })), taken, gap);
  return { x: Math.round(to.x + shift.x), y: Math.round(to.y + shift.y) };
}

/** The place asked for a block added after `block` (its top-left): to its right, at its height. */
export function after(block: XY): XY {
  return { x: block.x + NODE_WIDTH + 2 * PLACEMENT_GAP, y: block.y };
}

/** The place asked for a block that continues a link from `from` to `to`: beside the link's middle, below it. */
export function besideLink(from: XY, to: XY): XY {
  return { x: (from.x + to.x) / 2, y: Math.max(from.y, to.y) + NODE_HEIGHT + PLACEMENT_GAP };
}

/** A block's box at `p`. */
export function blockBox(p: XY): Box {
  return { x: p.x, y: p.y, width: NODE_WIDTH, height: NODE_HEIGHT };
}
