/**
 * A block's handles for React Flow, which takes them as each node's `handles` (its API for nodes it need not
 * measure), so a link's ends come from here, never from measuring the page: a block drawn without its handles
 * (zoomed out, see BlockNode) keeps its links, and a large diagram opens without measuring a thousand handles.
 * The geometry is model/handles.ts's, which the routes start and end at too.
 */
import { Position, type NodeHandle } from '@xyflow/react';
import { boxEnd, ERROR_HANDLE, HANDLE, IN_HANDLE, rightHandle, type Side } from '../../model/handles';
import { IN_PORT } from '../../model/layout';

export { rightHandlePercent } from '../../model/handles';

/** The handles of a block: its input (none on a start block), next and the type's ports on the right, error below. */
export function blockHandles(isStart: boolean, nextKey: string | undefined, ports: readonly string[],
  errorKey: string | undefined): NodeHandle[] {
  const handles: NodeHandle[] = [];
  if (!isStart) handles.push({ id: IN_PORT, type: 'target', position: Position.Left, ...IN_HANDLE });
  const right = [...(nextKey !== undefined ? [nextKey] : []), ...ports];
  const count = ports.length + 1; // the next handle's place is kept while the link keys are unknown
  right.forEach((key, i) => {
    const at = nextKey !== undefined ? i : i + 1;
    handles.push({ id: key, type: 'source', position: Position.Right, ...rightHandle(at, count) });
  });
  if (errorKey !== undefined) handles.push({ id: errorKey, type: 'source', position: Position.Bottom, ...ERROR_HANDLE });
  return handles;
}

/** Where a link meets the handle `id` of a block placed at `at` (model/handles' boxEnd), and its side. */
export function handleEnd(handles: readonly NodeHandle[] | undefined, id: string | null | undefined,
  at: { x: number; y: number }): { x: number; y: number; position: Position } | null {
  const h = handles?.find((c) => c.id === id);
  if (!h) return null;
  const box = { x: h.x, y: h.y, width: h.width ?? HANDLE, height: h.height ?? HANDLE };
  return { ...boxEnd(at, box, h.position as Side), position: h.position };
}
