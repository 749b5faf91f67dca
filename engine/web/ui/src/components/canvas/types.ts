import type { Edge, Node } from '@xyflow/react';
import type { Block, BlockType, LinkKind } from '../../api/types';
import type { LayoutResult } from '../../model/layout';

export type RunMark = 'ok' | 'failed' | 'running' | 'skipped' | null;

export type BlockNodeData = {
  block: Block;
  typeInfo?: BlockType;
  /** the palette is loaded and has no such type */
  unknownType: boolean;
  errors: number;
  warnings: number;
  firstProblem?: string;
  run: RunMark;
  steps: number;
  passes?: number;
  hasBody: boolean;
};
export type BlockNodeType = Node<BlockNodeData, 'block'>;

export type GroupNodeData = { loop: string; title: string; run: RunMark };
export type GroupNodeType = Node<GroupNodeData, 'loopGroup'>;

export type LinkEdgeData = {
  kind: LinkKind;
  label: string;
  when: string | null;
  index: number;
  count: number;
  route?: LayoutResult['edges'][string];
  taken: boolean;
  dimmed: boolean;
};
export type LinkEdgeType = Edge<LinkEdgeData, 'link'>;
