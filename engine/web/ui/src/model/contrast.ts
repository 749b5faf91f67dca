/**
 * WCAG 2 contrast: the relative luminance of an sRGB colour and the ratio of two (1 to 21). AA asks 4.5:1 of text,
 * 3:1 of large text and of the parts of a control (borders, focus rings, badges' fills). The themes' tokens are
 * checked with it (theme.test.ts).
 */

/** `#rgb` or `#rrggbb` as 0..255 channels; null for anything else (a var(), a name, a colour with alpha). */
export function parseHex(colour: string): [number, number, number] | null {
  const m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(colour.trim());
  if (!m) return null;
  const hex = m[1].length === 3 ? [...m[1]].map((c) => c + c).join('') : m[1];
  return [0, 2, 4].map((i) => parseInt(hex.slice(i, i + 2), 16)) as [number, number, number];
}

export function luminance(colour: string): number {
  const rgb = parseHex(colour);
  if (!rgb) throw new Error(`not a #hex colour: ${colour}`);
  const [r, g, b] = rgb.map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

export function contrastRatio(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/**
 * The custom properties a stylesheet gives `:root` (light) and `:root[data-theme='dark']` (dark: the light ones
 * with the dark theme's over them), from every rule with exactly that selector, in order.
 */
export function themeTokens(css: string): { light: Record<string, string>; dark: Record<string, string> } {
  const light: Record<string, string> = {};
  const darkOnly: Record<string, string> = {};
  const text = css.replace(/\/\*[\s\S]*?\*\//g, '');
  for (const rule of text.matchAll(/([^{}]+)\{([^{}]*)\}/g)) {
    const selector = rule[1].trim().replace(/"/g, "'");
    const into = selector === ':root' ? light : selector === ":root[data-theme='dark']" ? darkOnly : null;
    if (!into) continue;
    for (const decl of rule[2].matchAll(/(--[\w-]+)\s*:\s*([^;]+);?/g)) into[decl[1]] = decl[2].trim();
  }
  return { light, dark: { ...light, ...darkOnly } };
}
