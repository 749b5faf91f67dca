/**
 * Where a block's handles are. React Flow takes them as each node's `handles` (its API for nodes it need not
 * measure), so a link's ends come from here, never from measuring the page: a block drawn without its handles
 * (zoomed out, see BlockNode) keeps its links, and a large diagram opens without measuring a thousand handles.
 * The boxes are the ones styles.css draws: a HANDLE-px square centred on the inner edge of the block's frame
 * (a border of BORDER px, BORDER_LEFT px on the left for the type colour). A browser test compares the two.
 */
import { Position, type NodeHandle } from '@xyflow/react';
import { IN_PORT } from '../../model/layout';
import { NODE_HEIGHT, NODE_WIDTH } from '../../model/sizes';

const BORDER = 1;
const BORDER_LEFT = 4;
const HANDLE = 10;
const INNER_HEIGHT = NODE_HEIGHT - 2 * BORDER;

/** The height of the i-th of `count` handles on a block's right, in % of its inner height: next first, then ports. */
export function rightHandlePercent(i: number, count: number): number {
  return Math.round((100 * (i + 1)) / (count + 1));
}

/** The handles of a block: its input (none on a start block), next and the type's ports on the right, error below. */
export function blockHandles(isStart: boolean, nextKey: string | undefined, ports: readonly string[],
  errorKey: string | undefined): NodeHandle[] {
  const handles: NodeHandle[] = [];
  const box = { width: HANDLE, height: HANDLE };
  if (!isStart) {
    handles.push({ id: IN_PORT, type: 'target', position: Position.Left, x: BORDER_LEFT - HANDLE / 2,
      y: BORDER + INNER_HEIGHT / 2 - HANDLE / 2, ...box });
  }
  const right = [...(nextKey !== undefined ? [nextKey] : []), ...ports];
  const count = ports.length + 1; // the next handle's place is kept while the link keys are unknown
  right.forEach((key, i) => {
    const at = nextKey !== undefined ? i : i + 1;
    handles.push({ id: key, type: 'source', position: Position.Right, x: NODE_WIDTH - BORDER - HANDLE / 2,
      y: BORDER + (INNER_HEIGHT * rightHandlePercent(at, count)) / 100 - HANDLE / 2, ...box });
  });
  if (errorKey !== undefined) {
    handles.push({ id: errorKey, type: 'source', position: Position.Bottom,
      x: BORDER_LEFT + (NODE_WIDTH - BORDER_LEFT - BORDER) / 2 - HANDLE / 2, y: NODE_HEIGHT - BORDER - HANDLE / 2, ...box });
  }
  return handles;
}

/**
 * Where a link meets the handle `id` of a block placed at `at`: the handle box's outer edge, where React Flow puts
 * a link's end (its getHandlePosition): right and left edges at mid-height, the bottom edge at mid-width.
 */
export function handleEnd(handles: readonly NodeHandle[] | undefined, id: string | null | undefined,
  at: { x: number; y: number }): { x: number; y: number; position: Position } | null {
  const h = handles?.find((c) => c.id === id);
  if (!h) return null;
  const width = h.width ?? HANDLE;
  const height = h.height ?? HANDLE;
  const x = at.x + h.x;
  const y = at.y + h.y;
  if (h.position === Position.Right) return { x: x + width, y: y + height / 2, position: h.position };
  if (h.position === Position.Bottom) return { x: x + width / 2, y: y + height, position: h.position };
  if (h.position === Position.Top) return { x: x + width / 2, y, position: h.position };
  return { x, y: y + height / 2, position: h.position };
}
