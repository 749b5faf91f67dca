import type { Edge, Node } from '@xyflow/react';
import type { Block, BlockType } from '../../api/types';
import type { LinkKind } from '../../model/format';
import type { LayoutResult } from '../../model/layout';

export type RunMark = 'ok' | 'failed' | 'running' | 'skipped' | null;

/** A block's cost in a run (model/cost.ts): the badge's text and tooltip; `unknown`: no price known, `partial`: some. */
export type BlockCost = { text: string; title: string; state: 'known' | 'partial' | 'unknown' };

export type BlockNodeData = {
  block: Block;
  typeInfo?: BlockType;
  /** the palette is loaded and has no such type */
  unknownType: boolean;
  /** a start block has no input */
  isStart: boolean;
  errors: number;
  warnings: number;
  firstProblem?: string;
  run: RunMark;
  steps: number;
  passes?: number;
  /** its requests' cost in the run shown (none: no run, or no request) */
  cost?: BlockCost;
  /** the handles links leave from: the format's next and error keys (unknown until the format is), the type's ports */
  nextKey?: string;
  errorKey?: string;
  ports: readonly string[];
  /** drawn as a tile: the view is zoomed out past reading (mapping.ts, CanvasInput.overview) */
  overview: boolean;
};
export type BlockNodeType = Node<BlockNodeData, 'block'>;

export type GroupNodeData = { loop: string; title: string; run: RunMark };
export type GroupNodeType = Node<GroupNodeData, 'loopGroup'>;

/** How a link looks: a next link, the error link, or a link from one of the type's own ports (a Loop's body). */
export type LinkLook = 'next' | 'error' | 'port';

export type LinkEdgeData = {
  kind: LinkKind;
  look: LinkLook;
  label: string;
  when: string | null;
  index: number;
  count: number;
  route?: LayoutResult['edges'][string];
  /** a link from a block to itself: drawn over the block's top, never as a stub */
  self: boolean;
  taken: boolean;
  dimmed: boolean;
  /** a problem written at this link (a `next` link that never runs: `dead_link`), its message and hint */
  problem?: string;
};
export type LinkEdgeType = Edge<LinkEdgeData, 'link'>;
