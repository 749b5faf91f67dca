/**
 * Align and distribute a multi-selection: the new top-left corner of each box, from the boxes as they are. Pure; the
 * canvas turns the answer into one move (one undo step).
 */
import type { Box } from './placement';

export type Alignment = 'left' | 'center' | 'right' | 'top' | 'middle' | 'bottom';
export type Axis = 'horizontal' | 'vertical';
export interface Placed extends Box { id: string }

/** Each box lined up on the selection's left (center, right) edge or its top (middle, bottom). */
export function align(boxes: readonly Placed[], how: Alignment): Record<string, { x: number; y: number }> {
  const out: Record<string, { x: number; y: number }> = {};
  if (boxes.length < 2) return out;
  const left = Math.min(...boxes.map((b) => b.x));
  const right = Math.max(...boxes.map((b) => b.x + b.width));
  const top = Math.min(...boxes.map((b) => b.y));
  const bottom = Math.max(...boxes.map((b) => b.y + b.height));
  for (const b of boxes) {
    let { x, y } = b;
    if (how === 'left') x = left;
    else if (how === 'right') x = right - b.width;
    else if (how === 'center') x = (left + right) / 2 - b.width / 2;
    else if (how === 'top') y = top;
    else if (how === 'bottom') y = bottom - b.height;
    else y = (top + bottom) / 2 - b.height / 2;
    out[b.id] = { x: Math.round(x), y: Math.round(y) };
  }
  return out;
}

/**
 * The boxes spread along `axis` with equal gaps between them: the first and the last (by position) stay, the ones
 * between move; when they would overlap (less room than their sizes), the gap is the room they need plus `minGap`.
 */
export function distribute(boxes: readonly Placed[], axis: Axis, minGap = 24): Record<string, { x: number; y: number }> {
  const out: Record<string, { x: number; y: number }> = {};
  if (boxes.length < 2) return out;
  const at = (b: Box) => (axis === 'horizontal' ? b.x : b.y);
  const size = (b: Box) => (axis === 'horizontal' ? b.width : b.height);
  const sorted = [...boxes].sort((a, b) => at(a) - at(b) || a.id.localeCompare(b.id));
  const first = sorted[0];
  const last = sorted[sorted.length - 1];
  const room = at(last) + size(last) - at(first);
  const used = sorted.reduce((n, b) => n + size(b), 0);
  const even = Math.max((room - used) / (sorted.length - 1), minGap);
  let cursor = at(first);
  for (const b of sorted) {
    const place = Math.round(cursor);
    out[b.id] = axis === 'horizontal' ? { x: place, y: b.y } : { x: b.x, y: place };
    cursor += size(b) + even;
  }
  return out;
}
