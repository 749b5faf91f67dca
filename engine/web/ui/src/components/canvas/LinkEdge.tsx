/** A link: ELK's orthogonal route when the blocks sit where ELK put them, else a smooth step; label with order and `when`. */
import { memo } from 'react';
import { BaseEdge, EdgeLabelRenderer, getSmoothStepPath, type EdgeProps, type Position } from '@xyflow/react';
import type { XYPosition } from '@xyflow/react';
import { useStudio } from '../../store';
import { WhenEditor } from '../panels/EdgeProperties';
import { selfLoop } from '../../model/route';
import { NODE_HEIGHT } from '../../model/sizes';
import type { LinkEdgeData, LinkEdgeType } from './types';

const TOLERANCE = 24;

function near(a: XYPosition, b: XYPosition) {
  return Math.abs(a.x - b.x) < TOLERANCE && Math.abs(a.y - b.y) < TOLERANCE;
}

/** ELK's points with their ends moved onto the handles (keeping the first and last segments straight). */
export function snapRoute(points: XYPosition[], s: XYPosition, t: XYPosition): XYPosition[] | null {
  if (points.length < 2 || !near(points[0], s) || !near(points[points.length - 1], t)) return null;
  const pts = points.map((p) => ({ ...p }));
  const n = pts.length;
  const fix = (end: number, next: number, to: XYPosition) => {
    const horizontal = Math.abs(pts[end].y - pts[next].y) < 0.5;
    pts[end] = { ...to };
    if (n > 2) {
      if (horizontal) pts[next].y = to.y; else pts[next].x = to.x;
    }
  };
  fix(0, 1, s);
  fix(n - 1, n - 2, t);
  return pts;
}

export function roundedPath(pts: XYPosition[], radius = 8): string {
  let d = `M ${pts[0].x} ${pts[0].y}`;
  for (let i = 1; i < pts.length - 1; i++) {
    const [a, b, c] = [pts[i - 1], pts[i], pts[i + 1]];
    const d1 = Math.hypot(b.x - a.x, b.y - a.y);
    const d2 = Math.hypot(c.x - b.x, c.y - b.y);
    const r = Math.min(radius, d1 / 2, d2 / 2);
    const p1 = { x: b.x + ((a.x - b.x) / (d1 || 1)) * r, y: b.y + ((a.y - b.y) / (d1 || 1)) * r };
    const p2 = { x: b.x + ((c.x - b.x) / (d2 || 1)) * r, y: b.y + ((c.y - b.y) / (d2 || 1)) * r };
    d += ` L ${p1.x} ${p1.y} Q ${b.x} ${b.y} ${p2.x} ${p2.y}`;
  }
  const last = pts[pts.length - 1];
  return `${d} L ${last.x} ${last.y}`;
}

function midpoint(pts: XYPosition[]): XYPosition {
  let total = 0;
  for (let i = 1; i < pts.length; i++) total += Math.hypot(pts[i].x - pts[i - 1].x, pts[i].y - pts[i - 1].y);
  let half = total / 2;
  for (let i = 1; i < pts.length; i++) {
    const len = Math.hypot(pts[i].x - pts[i - 1].x, pts[i].y - pts[i - 1].y);
    if (half <= len) {
      const f = len ? half / len : 0;
      return { x: pts[i - 1].x + (pts[i].x - pts[i - 1].x) * f, y: pts[i - 1].y + (pts[i].y - pts[i - 1].y) * f };
    }
    half -= len;
  }
  return pts[0];
}

/** The condition editor under a selected link's label (only a selected link follows the diagram's edits). */
function SelectedWhenEditor({ id }: { id: string }) {
  const diagram = useStudio((s) => s.diagram);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  if (!diagram || readOnly) return null;
  return <div className="edge-label__editor"><WhenEditor diagram={diagram} edgeId={id} compact /></div>;
}

/**
 * A link's path between its ends `s` and `t` (leaving `s` towards `from`, reaching `t` from `to`), and where its
 * label goes: its route while its ends are where the route has them, else a smooth step.
 */
export function linkPath(data: LinkEdgeData, s: XYPosition, t: XYPosition, from: Position, to: Position): { path: string; label: XYPosition } {
  // a link to its own block follows the block while it is dragged (its stored route is where the block was)
  const routed = data.route ? snapRoute(data.route.points, s, t)
    : data.self ? selfLoop(s, data.look === 'error', t, { x: t.x, y: t.y - NODE_HEIGHT / 2, width: Math.max(40, s.x - t.x), height: NODE_HEIGHT }).points : null;
  if (routed) {
    const l = data.route ? data.route.label : undefined;
    return { path: roundedPath(routed), label: l ? { x: l.x + l.width / 2, y: l.y + l.height / 2 } : midpoint(routed) };
  }
  const [path, x, y] = getSmoothStepPath({ sourceX: s.x, sourceY: s.y, targetX: t.x, targetY: t.y, sourcePosition: from,
    targetPosition: to, borderRadius: 10, offset: 24 });
  return { path, label: { x, y } };
}

/** A link's classes (styles.css): its look, and whether a run took it, a run did not, or it is selected. */
export function linkClasses(data: LinkEdgeData, selected: boolean): string[] {
  const classes = ['link', `link--${data.look}`];
  if (data.taken) classes.push('is-taken');
  if (data.dimmed) classes.push('is-dimmed');
  if (data.problem) classes.push('has-problem');
  if (selected) classes.push('is-selected');
  return classes;
}

function LinkEdgeView(props: EdgeProps<LinkEdgeType>) {
  const { id, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, data, selected, markerEnd } = props;
  if (!data) return null;
  const { path, label } = linkPath(data, { x: sourceX, y: sourceY }, { x: targetX, y: targetY }, sourcePosition, targetPosition);
  const classes = linkClasses(data, !!selected);
  const select = () => useStudio.getState().select([], id);
  const chipText = data.label || (selected ? (data.look === 'error' ? 'on error' : data.look === 'port' ? data.kind : 'always') : '');
  const title = data.problem ?? data.when ?? undefined;
  return (
    <>
      <BaseEdge id={id} path={path} markerEnd={markerEnd} className={classes.join(' ')} interactionWidth={16} />
      {/* only a link with a label mounts the label layer: each one mounted looks the layer up at every change of
          React Flow's store, a cost on every frame of a drag when a large diagram mounts one per link */}
      {(chipText || (selected && data.look === 'next')) && (
        <EdgeLabelRenderer>
          <div className={`edge-label edge-label--${data.look}${selected ? ' is-selected' : ''}${data.taken ? ' is-taken' : ''}${data.problem ? ' has-problem' : ''} nodrag nopan`}
            style={{ transform: `translate(-50%, -50%) translate(${label.x}px, ${label.y}px)` }}>
            {chipText && (
              <button type="button" className="edge-label__chip" onClick={select} title={title}
                aria-label={`${chipText}: link ${id.replace(/^\w+:/, '')}${data.when ? ` when ${data.when}` : ''}${data.problem ? `: ${data.problem}` : ''}`}>
                {data.problem && <span className="edge-label__warn" aria-hidden="true">⚠ </span>}{chipText}
              </button>
            )}
            {selected && data.look === 'next' && <SelectedWhenEditor id={id} />}
          </div>
        </EdgeLabelRenderer>
      )}
    </>
  );
}

export const LinkEdge = memo(LinkEdgeView);
