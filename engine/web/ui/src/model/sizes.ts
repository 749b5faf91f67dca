/** Shared geometry of canvas nodes (the layout and the node component agree on it). */
export const NODE_WIDTH = 220;
export const NODE_HEIGHT = 76;
export const GROUP_PADDING = { top: 34, left: 24, bottom: 24, right: 24 };
export const LABEL_HEIGHT = 20;
export const LABEL_CHAR_WIDTH = 6.6;
export const LABEL_MAX_CHARS = 42;
/**
 * How Fit to view fits (components/canvas/fit.ts): never zoomed in past 1.1 (a small diagram is not blown up), a
 * margin of 15 % of the pane, animated over `duration` ms. Text stays readable when the view zooms out to fit: the
 * canvas's text grows as the zoom shrinks (its CSS reads `--zoom`, see ZoomVariable), to 11 px on screen down to a
 * zoom of about 0.5.
 */
export function fitOptions(duration = 200) {
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

/**
 * The lines of text on a block node, each with the widest it can be drawn: the room it has in a node (NODE_WIDTH
 * less the borders, the padding and, for the type, the icon) and its largest font size (the `min(…)` of its font
 * size in styles.css, reached when zoomed out).
 */
export const NODE_TEXT = {
  type: { room: 163, fontPx: 20, mono: false },
  title: { room: 195, fontPx: 22, mono: false },
  id: { room: 195, fontPx: 16, mono: true },
} as const;

/** At most how wide a character is, in em, in any usual sans (DejaVu Sans Bold, the widest, measured) or mono font. */
function charEm(ch: string, mono: boolean): number {
  if (ch > '\u007e') return 1.5; // outside ASCII: CJK, emoji, accents; counted per UTF-16 unit, so generously
  if (mono) return 0.65;
  if (ch === 'M' || ch === 'W' || ch === 'm' || ch === 'w' || ch === '@' || ch === '%') return 1.2;
  if (ch >= 'A' && ch <= 'Z') return 1.0;
  return 0.8;
}

/**
 * Whether `text` might not fit on its line of a block node, by an upper bound of its width. A line that surely fits
 * is drawn without the clip its ellipsis needs: each clip is a paint property of its own, and a large diagram has a
 * few on every block, all regrouped by the browser each frame a block is dragged.
 */
export function mayOverflow(text: string, line: (typeof NODE_TEXT)[keyof typeof NODE_TEXT]): boolean {
  let em = 0;
  for (const ch of text) em += charEm(ch, line.mono) * (ch.length > 1 ? 2 : 1);
  return em * line.fontPx > line.room;
}
