/** Shared geometry of canvas nodes (the layout and the node component agree on it). */
export const NODE_WIDTH = 220;
export const NODE_HEIGHT = 76;
export const GROUP_PADDING = { top: 34, left: 24, bottom: 24, right: 24 };
export const LABEL_HEIGHT = 20;
export const LABEL_CHAR_WIDTH = 6.6;
export const LABEL_MAX_CHARS = 42;
/** The smallest text drawn on the canvas (px at zoom 1), and the zoom that shows it at 11 px. */
export const SMALLEST_CANVAS_TEXT = 12;
export const READABLE_ZOOM = 11 / SMALLEST_CANVAS_TEXT;
/** Up to this many blocks, fitting the view never zooms out past READABLE_ZOOM: a small diagram stays readable. */
export const SMALL_DIAGRAM = 12;

/** React Flow's fitView options for a diagram of `blocks` blocks. */
export function fitOptions(blocks: number, duration = 200) {
  return { padding: 0.15, maxZoom: 1.1, minZoom: blocks <= SMALL_DIAGRAM ? READABLE_ZOOM : 0.05, duration };
}

export function edgeLabelText(when: string | null, index: number, count: number): string {
  const body = when ? truncate(when.replace(/^\{\{\s*|\s*\}\}$/g, ''), LABEL_MAX_CHARS) : count > 1 ? 'otherwise' : '';
  if (count > 1) return `${index + 1} · ${body}`;
  return body;
}

export function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function labelWidth(text: string): number {
  return Math.ceil(text.length * LABEL_CHAR_WIDTH + 16);
}
