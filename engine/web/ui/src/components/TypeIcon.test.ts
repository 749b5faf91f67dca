import { describe, expect, it } from 'vitest';
import { iconImage } from './TypeIcon';

/** The SVG text inside a CSS `url("data:image/svg+xml,…")`. */
function svgOf(url: string): string {
  const m = /^url\("data:image\/svg\+xml,(.*)"\)$/.exec(url);
  if (!m) throw new Error(`not an SVG data URL: ${url}`);
  return decodeURIComponent(m[1]);
}

describe('iconImage', () => {
  it('is a well-formed SVG image with the type glyph, white, filled for Start only', () => {
    for (const type of ['Start', 'Set', 'Loop', 'ClaudeRequest', 'HttpRequest', 'SomePlugin']) {
      const doc = new DOMParser().parseFromString(svgOf(iconImage(type)), 'image/svg+xml');
      expect(doc.querySelector('parsererror')).toBeNull();
      const svg = doc.documentElement;
      expect(svg.getAttribute('viewBox')).toBe('0 0 24 24');
      expect(svg.getAttribute('stroke')).toBe('#fff');
      expect(svg.getAttribute('fill')).toBe(type === 'Start' ? '#fff' : 'none');
      expect(svg.querySelector('path')?.getAttribute('d')).toMatch(/^M/);
    }
  });

  it('keeps nothing in the URL that would end the CSS string early', () => {
    const url = iconImage('HttpRequest');
    expect(url.slice(5, -2)).not.toMatch(/["'()\s]/);
  });

  it('differs by glyph and is the same string for the same type', () => {
    expect(iconImage('Set')).toBe(iconImage('Set'));
    expect(iconImage('Set')).not.toBe(iconImage('Loop'));
  });
});
