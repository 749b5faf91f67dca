/** A small glyph and colour per block type (plugin types get a stable colour from their name). */

const COLOURS: Record<string, string> = {
  Start: '#16a34a',
  Set: '#475569',
  Loop: '#7c3aed',
  ClaudeRequest: '#c2410c',
  GroqChatRequest: '#db2777',
  GeminiRequest: '#2563eb',
  ToolDispatch: '#0f766e',
  HttpRequest: '#0369a1',
};

export function typeColour(type: string): string {
  if (COLOURS[type]) return COLOURS[type];
  let h = 0;
  for (const ch of type) h = (h * 31 + ch.charCodeAt(0)) % 360;
  return `hsl(${h} 55% 40%)`;
}

function glyph(type: string): string {
  if (type === 'Start') return 'M7 5v14l11-7z';
  if (type === 'Set') return 'M5 9h14M5 15h14';
  if (type === 'Loop') return 'M17 3l3 3-3 3M20 6H9a5 5 0 0 0-5 5M7 21l-3-3 3-3M4 18h11a5 5 0 0 0 5-5';
  if (type === 'ToolDispatch') return 'M14.7 6.3a4 4 0 0 0-5.4 5.4L4 17v3h3l5.3-5.3a4 4 0 0 0 5.4-5.4l-2.5 2.5-2.4-.6-.6-2.4z';
  // A globe: HttpRequest calls a web API, not a model (its name would match the model requests' test below).
  if (type === 'HttpRequest') return 'M12 3a9 9 0 1 0 0 18 9 9 0 1 0 0-18M3 12h18M12 3c3 3 3 15 0 18M12 3c-3 3-3 15 0 18';
  if (/Request$|Chat/.test(type)) return 'M4 5h16v11H9l-5 4z';
  return 'M12 3l8 4.5v9L12 21l-8-4.5v-9z';
}

const icons = new Map<string, string>();

/**
 * The type's glyph as an SVG image (a CSS `url()`), white on the type colour. An image, not an inline `<svg>`: an
 * inline one is a paint property of its own (its view box scales), and a large diagram has one per block, all
 * regrouped by the browser each frame a block is dragged; a background image is painted with its box.
 */
export function iconImage(type: string): string {
  let url = icons.get(type);
  if (url === undefined) {
    const fill = type === 'Start' ? '#fff' : 'none';
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="${fill}" stroke="#fff" stroke-width="2" `
      + `stroke-linecap="round" stroke-linejoin="round"><path d="${glyph(type)}"/></svg>`;
    url = `url("data:image/svg+xml,${encodeURIComponent(svg)}")`;
    icons.set(type, url);
  }
  return url;
}

export function TypeIcon({ type, size = 16 }: { type: string; size?: number }) {
  return (
    <span className="type-icon" aria-hidden="true" style={{
      width: size + 8, height: size + 8,
      background: `${iconImage(type)} center / ${size}px ${size}px no-repeat, ${typeColour(type)}`,
    }} />
  );
}
