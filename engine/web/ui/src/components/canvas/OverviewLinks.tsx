/**
 * The links while the view is zoomed out past reading (Canvas's overview): one SVG with a path per link, in place of
 * React Flow's edges, each of which is an SVG of its own with three subscriptions to React Flow's store. On a large
 * diagram those are most of what a frame of a drag or a pan costs: the browser regroups hundreds of SVG roots and
 * React Flow asks every edge whether it moved. A link here is a line a pixel wide that cannot be aimed at, as its
 * block is a tile; its path and look are the edge's own (linkPath, linkClasses), its ends the nodes' declared
 * handles. Drawn in the layer under the blocks that React Flow keeps for edge labels, in the view's coordinates.
 */
import { memo, useRef } from 'react';
import { EdgeLabelRenderer } from '@xyflow/react';
import { handleEnd } from './handles';
import { linkClasses, linkPath } from './LinkEdge';
import type { BlockNodeType, LinkEdgeType } from './types';

/**
 * The SVG's box: the blocks' extent widened to whole steps of BOX_STEP, with a step to spare on each side. A link that
 * changes inside a fixed box repaints itself alone; an SVG sized by its content (overflow visible) changes its box
 * whenever a dragged block's link reaches past the others, and the browser then draws every link again, each frame.
 */
const BOX_STEP = 4096;

function box(blocks: BlockNodeType[]): { x: number; y: number; width: number; height: number } {
  let left = 0;
  let top = 0;
  let right = 0;
  let bottom = 0;
  for (const [i, n] of blocks.entries()) {
    const { x, y } = n.position;
    if (i === 0 || x < left) left = x;
    if (i === 0 || y < top) top = y;
    if (i === 0 || x > right) right = x;
    if (i === 0 || y > bottom) bottom = y;
  }
  const x = (Math.floor(left / BOX_STEP) - 1) * BOX_STEP;
  const y = (Math.floor(top / BOX_STEP) - 1) * BOX_STEP;
  return { x, y, width: (Math.ceil(right / BOX_STEP) + 1) * BOX_STEP - x, height: (Math.ceil(bottom / BOX_STEP) + 1) * BOX_STEP - y };
}

interface Drawn {
  edge: LinkEdgeType;
  source: BlockNodeType;
  target: BlockNodeType;
  d: string;
}

function OverviewLinksView({ blocks, edges }: { blocks: BlockNodeType[]; edges: LinkEdgeType[] }) {
  // a path is computed again only when its link or one of its two blocks is another object (a drag moves one block)
  const drawn = useRef(new Map<string, Drawn>());
  const byId = new Map(blocks.map((n) => [n.id, n]));
  const next = new Map<string, Drawn>();
  const paths = [];
  for (const edge of edges) {
    const source = byId.get(edge.source);
    const target = byId.get(edge.target);
    if (!source || !target || source.hidden || target.hidden || !edge.data) continue;
    let line = drawn.current.get(edge.id);
    if (!line || line.edge !== edge || line.source !== source || line.target !== target) {
      const s = handleEnd(source.handles, edge.sourceHandle, source.position);
      const t = handleEnd(target.handles, edge.targetHandle, target.position);
      if (!s || !t) continue;
      line = { edge, source, target, d: linkPath(edge.data, s, t, s.position, t.position).path };
    }
    next.set(edge.id, line);
    paths.push(<path key={edge.id} id={edge.id} d={line.d} className={linkClasses(edge.data, !!edge.selected).join(' ')} />);
  }
  drawn.current = next;
  const { x, y, width, height } = box(blocks);
  return (
    <EdgeLabelRenderer>
      <svg className="overview-links" data-testid="overview-links" aria-hidden="true" width={width} height={height}
        style={{ left: x, top: y }}>
        <g transform={`translate(${-x} ${-y})`}>{paths}</g>
      </svg>
    </EdgeLabelRenderer>
  );
}

export const OverviewLinks = memo(OverviewLinksView);
