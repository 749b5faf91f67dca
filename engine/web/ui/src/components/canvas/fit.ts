/**
 * Fit to view over the whole picture: the blocks and loop groups as drawn, and every link's route and label. React
 * Flow's own fitView counts nodes only, so a back-link routed around the blocks (ELK's, or model/route's) ran past
 * the pane's edge.
 */
import { getViewportForBounds, type Rect, type ReactFlowInstance, type Node, type Edge } from '@xyflow/react';
import { fitOptions } from '../../model/sizes';
import type { LinkEdgeType } from './types';

/** `box` grown to take in every link's route points and label box. */
export function withLinks(box: Rect, edges: readonly LinkEdgeType[]): Rect {
  let [left, top, right, bottom] = [box.x, box.y, box.x + box.width, box.y + box.height];
  const take = (x: number, y: number) => {
    left = Math.min(left, x);
    top = Math.min(top, y);
    right = Math.max(right, x);
    bottom = Math.max(bottom, y);
  };
  for (const e of edges) {
    const route = e.data?.route;
    if (!route) continue;
    for (const p of route.points) take(p.x, p.y);
    if (route.label) {
      take(route.label.x, route.label.y);
      take(route.label.x + route.label.width, route.label.y + route.label.height);
    }
  }
  return { x: left, y: top, width: right - left, height: bottom - top };
}

/** The pane's size and the view's least zoom, as React Flow's store has them. */
export interface Pane {
  width: number;
  height: number;
  minZoom: number;
}

/**
 * A small diagram is never fitted below READABLE_ZOOM (its text readable, not tiles: a narrow pane beside the YAML
 * made a 7-block diagram unreadable); it is centred at that zoom instead. A large one is fitted whole, as an overview.
 */
export const READABLE_ZOOM = 0.55;
export const SMALL_DIAGRAM = 40;

/** The view that shows `box` in the pane: fitted, then (a small diagram) at least READABLE_ZOOM, centred on the box. */
export function fittedViewport(box: Rect, pane: Pane, blocks: number, padding: number, maxZoom: number): { x: number; y: number; zoom: number } {
  const fit = getViewportForBounds(box, pane.width, pane.height, pane.minZoom, maxZoom, padding);
  if (fit.zoom >= READABLE_ZOOM || blocks > SMALL_DIAGRAM) return fit;
  const zoom = READABLE_ZOOM;
  return { x: pane.width / 2 - (box.x + box.width / 2) * zoom, y: pane.height / 2 - (box.y + box.height / 2) * zoom, zoom };
}

/** Moves the view so the blocks and their links fill the pane (never zoomed in past fitOptions' maxZoom). */
export function fitDiagram(rf: ReactFlowInstance<Node, Edge>, pane: Pane, edges: readonly LinkEdgeType[], duration?: number): void {
  const nodes = rf.getNodes();
  if (!nodes.length || !pane.width || !pane.height) return;
  const { padding, maxZoom, duration: animated } = fitOptions(duration);
  const box = withLinks(rf.getNodesBounds(nodes), edges);
  void rf.setViewport(fittedViewport(box, pane, nodes.filter((n) => n.type === 'block').length, padding, maxZoom), { duration: animated });
}
