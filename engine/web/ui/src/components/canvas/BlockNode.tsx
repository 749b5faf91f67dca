/** A block on the canvas: type colour and icon, label and id, problem badge, run state; ports as handles. */
import { memo } from 'react';
import { Handle, Position, type NodeProps } from '@xyflow/react';
import { TypeIcon, typeColour } from '../TypeIcon';
import type { BlockNodeType } from './types';

function BlockNodeView({ data, selected }: NodeProps<BlockNodeType>) {
  const { block, errors, warnings, firstProblem, run, steps, passes, hasBody, typeInfo, unknownType } = data;
  const title = block.label || block.id;
  const classes = ['block-node'];
  if (selected) classes.push('is-selected');
  if (errors) classes.push('has-errors');
  else if (warnings) classes.push('has-warnings');
  if (run) classes.push(`run-${run}`);
  const isStart = block.type === 'Start';
  return (
    <div className={classes.join(' ')} data-testid={`node-${block.id}`} style={{ ['--type' as string]: typeColour(block.type) }}
      title={firstProblem ?? typeInfo?.description}>
      {!isStart && <Handle type="target" position={Position.Left} id="in" className="handle handle--in" aria-label={`${block.id} input`} />}
      <div className="block-node__head">
        <TypeIcon type={block.type} size={12} />
        <span className="block-node__type">{block.type}</span>
        <span className="field__spacer" />
        {run && run !== 'skipped' && steps > 0 && (
          <span className={`run-badge run-badge--${run}`} title={`${steps} step${steps > 1 ? 's' : ''}`}>
            {run === 'failed' ? '✕' : run === 'running' ? '…' : '✓'}{passes !== undefined ? ` ×${passes}` : steps > 1 ? ` ×${steps}` : ''}
          </span>
        )}
        {(errors > 0 || warnings > 0) && (
          <span className={`problem-badge ${errors ? 'problem-badge--error' : 'problem-badge--warning'}`}
            aria-label={`${errors} errors, ${warnings} warnings`}>{errors || warnings}</span>
        )}
      </div>
      <div className="block-node__title">{title}</div>
      <div className="block-node__id">{block.label ? block.id : unknownType ? 'unknown type' : ''}</div>
      <Handle type="source" position={Position.Right} id="next" className={`handle handle--next${hasBody ? ' handle--upper' : ''}`}
        aria-label={`${block.id} next`} />
      {hasBody && (
        <>
          <Handle type="source" position={Position.Right} id="body" className="handle handle--body handle--lower" aria-label={`${block.id} body`} />
          <span className="handle-label handle-label--body">body</span>
        </>
      )}
      <Handle type="source" position={Position.Bottom} id="on_error" className="handle handle--error" aria-label={`${block.id} on_error`} />
    </div>
  );
}

export const BlockNode = memo(BlockNodeView);

export function LoopGroupNode({ data }: NodeProps<import('./types').GroupNodeType>) {
  return (
    <div className={`loop-group${data.run ? ` run-${data.run}` : ''}`} aria-hidden="true">
      <span className="loop-group__title">{data.title}</span>
    </div>
  );
}
