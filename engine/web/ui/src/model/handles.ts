/**
 * Where a block's handles are, in the block's own coordinates: the one geometry the canvas declares its handles
 * from (components/canvas/handles.ts, for React Flow) and the routes start and end at (model/route.ts). The boxes
 * are the ones styles.css draws: a HANDLE-px square centred on the inner edge of the block's frame (a border of
 * BORDER px, BORDER_LEFT px on the left for the type colour). A browser test compares the two.
 */
import { NODE_HEIGHT, NODE_WIDTH } from './sizes';

const BORDER = 1;
const BORDER_LEFT = 4;
export const HANDLE = 10;
const INNER_HEIGHT = NODE_HEIGHT - 2 * BORDER;

export interface HandleBox { x: number; y: number; width: number; height: number }
interface Point { x: number; y: number }

/** The height of the i-th of `count` handles on a block's right, in % of its inner height: next first, then ports. */
export function rightHandlePercent(i: number, count: number): number {
  return Math.round((100 * (i + 1)) / (count + 1));
}

const box = (x: number, y: number): HandleBox => ({ x, y, width: HANDLE, height: HANDLE });

/** The input handle, on the left edge at mid-height. */
export const IN_HANDLE = box(BORDER_LEFT - HANDLE / 2, BORDER + INNER_HEIGHT / 2 - HANDLE / 2);

/** The right handle `at` of `count` places (next's place is 0, the type's ports follow). */
export function rightHandle(at: number, count: number): HandleBox {
  return box(NODE_WIDTH - BORDER - HANDLE / 2, BORDER + (INNER_HEIGHT * rightHandlePercent(at, count)) / 100 - HANDLE / 2);
}

/** The error handle, on the bottom edge at the middle of the frame's inside. */
export const ERROR_HANDLE = box(BORDER_LEFT + (NODE_WIDTH - BORDER_LEFT - BORDER) / 2 - HANDLE / 2, NODE_HEIGHT - BORDER - HANDLE / 2);

/** A side of a block, as React Flow's `Position` spells it. */
export type Side = 'left' | 'right' | 'top' | 'bottom';

/**
 * Where a link meets the handle `box` on the `side` of a block placed at `block`: the box's outer edge, where React
 * Flow puts a link's end (its getHandlePosition): the left and right edges at mid-height, the bottom and top edges
 * at mid-width.
 */
export function boxEnd(block: Point, box: HandleBox, side: Side): Point {
  const x = block.x + box.x;
  const y = block.y + box.y;
  if (side === 'right') return { x: x + box.width, y: y + box.height / 2 };
  if (side === 'bottom') return { x: x + box.width / 2, y: y + box.height };
  if (side === 'top') return { x: x + box.width / 2, y };
  return { x, y: y + box.height / 2 };
}

export const inEnd = (block: Point): Point => boxEnd(block, IN_HANDLE, 'left');
export const rightEnd = (block: Point, at: number, count: number): Point => boxEnd(block, rightHandle(at, count), 'right');
export const errorEnd = (block: Point): Point => boxEnd(block, ERROR_HANDLE, 'bottom');
