/** Shared geometry of canvas nodes (the layout and the node component agree on it). */
export const NODE_WIDTH = 220;
export const NODE_HEIGHT = 76;
export const GROUP_PADDING = { top: 34, left: 24, bottom: 24, right: 24 };
export const LABEL_HEIGHT = 20;
export const LABEL_CHAR_WIDTH = 6.6;
export const LABEL_MAX_CHARS = 42;
/**
 * React Flow's fitView options for a diagram of `blocks` blocks: never zoomed in past 1.1 (a small diagram is not
 * blown up). Text stays readable when the view zooms out to fit: the canvas's text grows as the zoom shrinks (its
 * CSS reads `--zoom`, see ZoomVariable), to 11 px on screen down to a zoom of about 0.5.
 */
export function fitOptions(_blocks: number, duration = 200) {
  return { padding: 0.15, maxZoom: 1.1, duration };
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
