/**
 * Orthogonal routes around blocks for the links ELK did not route (a block whose place is written in the file,
 * a link to itself): a few candidate paths (a step through the gap between the blocks, or around above or below
 * what is in the way), the shortest that crosses no block kept, and its label put on a part of it where no block
 * is. Pure geometry over the blocks' rectangles; the canvas mapping calls it when the diagram or the layout changes
 * (never during a drag).
 */
import { errorEnd, inEnd, rightEnd } from './handles';
import { LABEL_HEIGHT } from './sizes';

export interface Point { x: number; y: number }
export interface Rect { x: number; y: number; width: number; height: number }
export interface Route { points: Point[]; label?: Rect }

/** How far a link leaves its port straight before it turns, and how far it keeps from blocks. */
export const STUB = 18;
const CLEARANCE = 8;

/** Where a link meets a block's handle (model/handles): the input on the left, next then the type's ports on the
 * right (`index` of `rightCount` places), error at the bottom. */
export function handlePoint(block: Point, side: 'in' | 'right' | 'bottom', index = 0, rightCount = 1): Point {
  if (side === 'in') return inEnd(block);
  if (side === 'bottom') return errorEnd(block);
  return rightEnd(block, index, rightCount);
}

function crosses(a: Point, b: Point, r: Rect): boolean {
  const left = Math.min(a.x, b.x);
  const right = Math.max(a.x, b.x);
  const top = Math.min(a.y, b.y);
  const bottom = Math.max(a.y, b.y);
  return left < r.x + r.width + CLEARANCE && right > r.x - CLEARANCE && top < r.y + r.height + CLEARANCE && bottom > r.y - CLEARANCE;
}

function overlaps(a: Rect, b: Rect): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

function length(points: Point[]): number {
  let total = 0;
  for (let i = 1; i < points.length; i++) total += Math.abs(points[i].x - points[i - 1].x) + Math.abs(points[i].y - points[i - 1].y);
  return total + points.length * 24; // a bend costs a little: fewer turns read better
}

/** Drops points that repeat or lie on a straight line between their neighbours. */
function simplify(points: Point[]): Point[] {
  const out: Point[] = [];
  for (const p of points) {
    const last = out[out.length - 1];
    if (last && Math.abs(last.x - p.x) < 0.5 && Math.abs(last.y - p.y) < 0.5) continue;
    const before = out[out.length - 2];
    if (before && last && ((Math.abs(before.x - last.x) < 0.5 && Math.abs(last.x - p.x) < 0.5) || (Math.abs(before.y - last.y) < 0.5 && Math.abs(last.y - p.y) < 0.5))) {
      out[out.length - 1] = p;
      continue;
    }
    out.push(p);
  }
  return out;
}

/**
 * A route from `s` (leaving rightwards, or downwards from the bottom port) to `t` (entering from the left) that
 * crosses none of `blocks` except where it leaves `from` and enters `to`; the label (width × LABEL_HEIGHT), if
 * any, on a part of it clear of every block.
 */
export function routeAround(s: Point, down: boolean, t: Point, from: Rect, to: Rect, blocks: Rect[], labelWidth = 0,
  labels: Rect[] = []): Route {
  const out = down ? { x: s.x, y: s.y + STUB } : { x: s.x + STUB, y: s.y };
  const into = { x: t.x - STUB, y: t.y };
  const others = blocks.filter((b) => b !== from && b !== to);
  const near = others.filter((b) => b.x < Math.max(s.x, t.x) + 600 && b.x + b.width > Math.min(s.x, t.x) - 600);
  const candidates: Point[][] = [];
  if (into.x >= out.x && !down) {
    // a step through the gap: down or up at some x between the blocks
    const xs = new Set([Math.round((out.x + into.x) / 2)]);
    for (const b of near) for (const x of [b.x - 2 * CLEARANCE, b.x + b.width + 2 * CLEARANCE]) if (x > out.x && x < into.x) xs.add(Math.round(x));
    for (const x of xs) candidates.push([s, { x, y: s.y }, { x, y: t.y }, t]);
  }
  // around: along a horizontal lane above or below what lies between them
  const lanes = new Set<number>([Math.round((s.y + t.y) / 2)]);
  const span = [Math.min(out.x, into.x), Math.max(out.x, into.x)];
  for (const b of [...near, from, to]) {
    if (b.x > span[1] + 40 || b.x + b.width < span[0] - 40) continue;
    lanes.add(Math.round(b.y - 3 * CLEARANCE));
    lanes.add(Math.round(b.y + b.height + 3 * CLEARANCE));
  }
  const columns = (x: number, forward: number) => {
    const found = [x];
    for (const b of near) if (b.y < Math.max(s.y, t.y) + 200 && b.y + b.height > Math.min(s.y, t.y) - 200) {
      const beyond = forward > 0 ? b.x + b.width + 2 * CLEARANCE : b.x - 2 * CLEARANCE;
      if ((beyond - x) * forward > 0) found.push(Math.round(beyond));
    }
    return found.sort((a, b) => Math.abs(a - x) - Math.abs(b - x)).slice(0, 4);
  };
  // the same columns for every lane: found once
  const leaving = down ? [out.x] : columns(out.x, 1);
  const entering = columns(into.x, -1);
  for (const y of [...lanes].sort((a, b) => Math.abs(a - (s.y + t.y) / 2) - Math.abs(b - (s.y + t.y) / 2))) {
    for (const x1 of leaving) {
      for (const x2 of entering) {
        candidates.push(down ? [s, { x: x1, y: y }, { x: x2, y }, { x: x2, y: t.y }, t]
          : [s, { x: x1, y: s.y }, { x: x1, y }, { x: x2, y }, { x: x2, y: t.y }, t]);
      }
    }
  }
  const clear = (points: Point[]) => points.every((p, i) => {
    if (i === 0) return true;
    const a = points[i - 1];
    if (others.some((b) => crosses(a, p, b))) return false;
    // only the first part may touch where it leaves, only the last where it enters
    if (i > 1 && crosses(a, p, from)) return false;
    if (i < points.length - 1 && crosses(a, p, to)) return false;
    return true;
  });
  // the shortest clear route with room for its label beside no block; else the shortest clear one. Tried in order of
  // length and stopped at the first that does: on a large diagram there are thousands of candidates, most never tried.
  // A route is checked as built, stubs apart: simplified, a link back to the block before ran its port's stub and the
  // lane into one straight part, which may cross both its blocks ("only the first part may touch where it leaves").
  const ranked = candidates.map((c) => { const points = simplify(c); return { built: c, points, length: length(points) }; })
    .sort((a, b) => a.length - b.length);
  let shortest: Point[] | undefined;
  for (const { built, points } of ranked) {
    if (!clear(built)) continue;
    shortest ??= points;
    if (!labelWidth) return { points, label: undefined };
    const label = placeLabel(points, labelWidth, blocks, labels);
    if (!blocks.some((b) => overlaps(label, b))) return { points, label };
  }
  const points = shortest ?? simplify(candidates[0] ?? [s, t]);
  return { points, label: labelWidth ? placeLabel(points, labelWidth, blocks, labels) : undefined };
}

/** A link from a block back to itself: out of its port, over its top, into its input. */
export function selfLoop(s: Point, down: boolean, t: Point, block: Rect, labelWidth = 0, blocks: Rect[] = [], labels: Rect[] = []): Route {
  const lane = block.y - 28;
  const right = block.x + block.width + STUB;
  const left = block.x - STUB;
  const points = down
    ? [s, { x: s.x, y: block.y + block.height + STUB }, { x: left, y: block.y + block.height + STUB }, { x: left, y: t.y }, t]
    : [s, { x: right, y: s.y }, { x: right, y: lane }, { x: left, y: lane }, { x: left, y: t.y }, t];
  return { points, label: labelWidth ? placeLabel(points, labelWidth, blocks, labels) : undefined };
}

/**
 * The label's box on the longest horizontal part of a route clear of blocks and of the `labels` already placed; else
 * clear of blocks only (two links that share their way may have to share a place); else on the longest part.
 */
export function placeLabel(points: Point[], width: number, blocks: Rect[], labels: Rect[] = []): Rect {
  const parts: Array<{ box: Rect; length: number }> = [];
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1];
    const b = points[i];
    const horizontal = Math.abs(a.y - b.y) < 0.5;
    const length = Math.abs(a.x - b.x) + Math.abs(a.y - b.y);
    for (const f of [0.5, 0.3, 0.7, 0.15, 0.85]) {
      const cx = a.x + (b.x - a.x) * f;
      const cy = a.y + (b.y - a.y) * f;
      parts.push({ box: { x: cx - width / 2, y: cy - LABEL_HEIGHT / 2, width, height: LABEL_HEIGHT }, length: horizontal ? length + 1000 : length });
    }
  }
  parts.sort((p, q) => q.length - p.length);
  const clearOfBlocks = parts.filter((p) => !blocks.some((b) => overlaps(p.box, b)));
  const found = clearOfBlocks.find((p) => !labels.some((l) => overlaps(p.box, l))) ?? clearOfBlocks[0];
  if (found) return found.box;
  // no place on the route is clear (blocks moved close around it): the one that covers the least of any block
  return parts.reduce((best, p) => (coveredArea(p.box, blocks) < coveredArea(best.box, blocks) ? p : best), parts[0]).box;
}

/** How much of `blocks` the box covers, in square units. */
function coveredArea(box: Rect, blocks: Rect[]): number {
  let area = 0;
  for (const b of blocks) {
    const w = Math.min(box.x + box.width, b.x + b.width) - Math.max(box.x, b.x);
    const h = Math.min(box.y + box.height, b.y + b.height) - Math.max(box.y, b.y);
    if (w > 0 && h > 0) area += w * h;
  }
  return area;
}
