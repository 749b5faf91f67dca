/**
 * A block on the canvas: type colour and icon, label and id, problem badge, run state; ports as handles. Zoomed out
 * past reading, a tile: its frame in the type's colour and its state's, with its name as a tooltip, and no text or
 * handles, which cannot be read or aimed at there and which the browser would lay out and paint each frame of a drag
 * or a pan (the links keep their ends: they come from the node's `handles`, see handles.ts).
 */
import { Fragment, memo, type KeyboardEvent, type MouseEvent as ReactMouseEvent } from 'react';
import { Handle, Position, type NodeProps } from '@xyflow/react';
import { IN_PORT } from '../../model/layout';
import { mayOverflow, NODE_HEIGHT, NODE_TEXT } from '../../model/sizes';
import { after, PLACEMENT_GAP } from '../../model/placement';
import { useStudio } from '../../store';
import { TypeIcon, typeColour } from '../TypeIcon';
import { PinBadge } from '../pins/Pins';
import { rightHandlePercent } from './handles';
import type { BlockNodeType, GroupNodeType } from './types';

function rightHandleTop(i: number, count: number): string {
  return `${rightHandlePercent(i, count)}%`;
}

/**
 * A "+" beside an output handle of the selected block: opens the quick-add search there, for a block linked from that
 * handle (`key`: next, on_error or a port), asked for to the right (below, for the error handle).
 */
function HandlePlus({ id, handle, at, top, x, y }: { id: string; handle: string; at: number; top?: string; x: number; y: number }) {
  const open = (e: ReactMouseEvent<HTMLButtonElement> | KeyboardEvent<HTMLButtonElement>) => {
    e.stopPropagation();
    const r = e.currentTarget.getBoundingClientRect();
    const down = top === undefined;
    const want = down ? { x, y: y + NODE_HEIGHT + 2 * PLACEMENT_GAP } : { ...after({ x, y }), y: y + at * (NODE_HEIGHT + PLACEMENT_GAP) };
    useStudio.getState().openQuickAdd({ screen: { x: r.right + 6, y: r.top }, flow: want, source: id, handle });
  };
  return (
    <button type="button" className={`handle-plus nodrag nopan ${top === undefined ? 'handle-plus--bottom' : 'handle-plus--right'}`}
      style={top === undefined ? undefined : { top }} aria-label={`Add a block after ${id} (${handle})`} title={`Add a block linked from ${handle}`}
      onClick={open} onKeyDown={(e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); open(e); } }}>+</button>
  );
}

function BlockNodeView({ id, data, selected, positionAbsoluteX, positionAbsoluteY, draggable }: NodeProps<BlockNodeType>) {
  const { block, errors, warnings, firstProblem, run, steps, passes, cost, ports, nextKey, errorKey, typeInfo, unknownType, isStart,
    overview } = data;
  const title = block.label || block.id;
  const classes = ['block-node'];
  if (overview) classes.push('block-node--tile');
  if (selected) classes.push('is-selected');
  if (errors) classes.push('has-errors');
  else if (warnings) classes.push('has-warnings');
  if (run) classes.push(`run-${run}`);
  const right = ports.length + 1;
  const badges = (!!run && run !== 'skipped' && steps > 0) || errors > 0 || warnings > 0;
  const idLine = block.label ? block.id : unknownType ? 'unknown type' : '';
  if (overview) {
    const tip = `${title}${block.label ? ` (${block.id})` : ''} · ${block.type}${firstProblem ? ` — ${firstProblem}` : ''}`;
    return <div className={classes.join(' ')} data-testid={`node-${block.id}`} style={{ ['--type' as string]: typeColour(block.type) }} title={tip} />;
  }
  // a line that might not fit is clipped, with an ellipsis; one that surely fits is not (see mayOverflow)
  const fit = (text: string, line: keyof typeof NODE_TEXT, always = false) => (always || mayOverflow(text, NODE_TEXT[line]) ? ' is-clipped' : '');
  return (
    <div className={classes.join(' ')} data-testid={`node-${block.id}`} style={{ ['--type' as string]: typeColour(block.type) }}
      title={firstProblem ?? typeInfo?.description}>
      {!isStart && <Handle type="target" position={Position.Left} id={IN_PORT} className="handle handle--in" title={`${block.id} input`} />}
      <div className="block-node__head">
        <TypeIcon type={block.type} size={12} />
        <span className={`block-node__type${fit(block.type, 'type', badges)}`}>{block.type}</span>
        <span className="field__spacer" />
        <PinBadge block={block.id} />
        {run && run !== 'skipped' && steps > 0 && (
          <span className={`run-badge run-badge--${run}`} title={`${steps} step${steps > 1 ? 's' : ''}`}>
            {run === 'failed' ? '✕' : run === 'running' ? '…' : '✓'}{passes !== undefined ? ` ×${passes}` : steps > 1 ? ` ×${steps}` : ''}
          </span>
        )}
        {(errors > 0 || warnings > 0) && (
          <span className={`problem-badge ${errors ? 'problem-badge--error' : 'problem-badge--warning'}`} role="img"
            aria-label={`${errors} errors, ${warnings} warnings`}>{errors || warnings}</span>
        )}
      </div>
      <div className={`block-node__title${fit(title, 'title')}`}>{title}</div>
      {cost ? (
        // its id, and beside it what its requests cost in the run shown (clipped, the whole in its tooltip)
        <div className="block-node__foot">
          <div className="block-node__id is-clipped">{idLine}</div>
          <span className={`cost-badge cost-badge--${cost.state}`} data-testid={`cost-${block.id}`} title={cost.title}>
            {cost.text}</span>
        </div>
      ) : <div className={`block-node__id${fit(idLine, 'id')}`}>{idLine}</div>}
      {nextKey !== undefined && (
        <Handle type="source" position={Position.Right} id={nextKey} className="handle handle--next"
          style={{ top: rightHandleTop(0, right) }} title={`${block.id} ${nextKey}`} />
      )}
      {ports.map((port, i) => (
        <Fragment key={port}>
          <Handle type="source" position={Position.Right} id={port} className="handle handle--port"
            style={{ top: rightHandleTop(i + 1, right) }} title={`${block.id} ${port}`} />
          <span className="handle-label handle-label--port" style={{ top: `calc(${rightHandleTop(i + 1, right)} - 7px)` }}>{port}</span>
        </Fragment>
      ))}
      {errorKey !== undefined && (
        <Handle type="source" position={Position.Bottom} id={errorKey} className="handle handle--error" title={`${block.id} ${errorKey}`} />
      )}
      {selected && draggable && (
        <>
          {nextKey !== undefined && <HandlePlus id={id} handle={nextKey} at={0} top={rightHandleTop(0, right)} x={positionAbsoluteX} y={positionAbsoluteY} />}
          {ports.map((port, i) => (
            <HandlePlus key={port} id={id} handle={port} at={i + 1} top={rightHandleTop(i + 1, right)} x={positionAbsoluteX} y={positionAbsoluteY} />
          ))}
          {errorKey !== undefined && <HandlePlus id={id} handle={errorKey} at={0} x={positionAbsoluteX} y={positionAbsoluteY} />}
        </>
      )}
    </div>
  );
}

export const BlockNode = memo(BlockNodeView);

export function LoopGroupNode({ data }: NodeProps<GroupNodeType>) {
  return (
    <div className={`loop-group${data.run ? ` run-${data.run}` : ''}`} aria-hidden="true">
      <span className="loop-group__title">{data.title}</span>
    </div>
  );
}
