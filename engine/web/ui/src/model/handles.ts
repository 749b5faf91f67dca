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

/**
 * Where a link meets a handle of a block placed at `block`: the box's outer edge, where React Flow puts a link's
 * end (its getHandlePosition): the input's left edge and a right handle's right edge at mid-height, the error
 * handle's bottom edge at mid-width.
 */
export function inEnd(block: Point): Point {
  return { x: block.x + IN_HANDLE.x, y: block.y + IN_HANDLE.y + HANDLE / 2 };
}

export function rightEnd(block: Point, at: number, count: number): Point {
  const h = rightHandle(at, count);
  return { x: block.x + h.x + HANDLE, y: block.y + h.y + HANDLE / 2 };
}

export function errorEnd(block: Point): Point {
  return { x: block.x + ERROR_HANDLE.x + HANDLE / 2, y: block.y + ERROR_HANDLE.y + HANDLE };
}
