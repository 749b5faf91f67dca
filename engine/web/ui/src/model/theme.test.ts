/** WCAG AA in both themes: each text and background pair the stylesheet uses, read from styles.css's tokens. */
import { describe, expect, it } from 'vitest';
import { contrastRatio, themeTokens } from './contrast';

/** styles.css's text (Vitest empties a stylesheet imported, `?raw` too): read with Node's fs, untyped in this project */
type Fs = { readFileSync(path: string, encoding: 'utf8'): string };
const FS = 'node:fs';
const fs = (await import(/* @vite-ignore */ FS)) as Fs;
const css = fs.readFileSync('src/styles.css', 'utf8'); // Vitest runs in engine/web/ui

const TEXT = 4.5;
const UI = 3;

/** [text token, background token, the least ratio, where the pair is used] */
const PAIRS: Array<[string, string, number, string]> = [
  ...['--bg', '--panel', '--chip', '--hover', '--subtle', '--accent-soft'].flatMap((bg): Array<[string, string, number, string]> => [
    ['--text', bg, TEXT, 'body text'],
    ['--text-2', bg, TEXT, 'toolbar buttons, hints, icon buttons'],
    ['--muted', bg, TEXT, 'secondary text: ids, meta, tabs, chips, palette descriptions'],
  ]),
  ['--accent-text', '--panel', TEXT, 'a selected link label, the active completion'],
  ['--accent-text', '--accent-soft', TEXT, 'the selected file name, a segmented choice'],
  ['--accent-text', '--hover', TEXT, 'the selected file name under the pointer'],
  ['--accent', '--panel', TEXT, 'text links (btn-link)'],
  ['--accent', '--accent-soft', TEXT, 'the YAML toggle when on'],
  ['--ok-text', '--ok-soft', TEXT, 'the "valid" pill, a passing scenario'],
  ['--ok-text', '--panel', TEXT, 'a taken link\'s label, "pass"'],
  ['--err-text', '--err-soft', TEXT, 'the error pill, a problem, a failed step'],
  ['--err-text', '--panel', TEXT, 'inline errors, a danger button, "fail"'],
  ['--warn-text', '--warn-soft', TEXT, 'the unsaved pill, a warning, an unknown cost'],
  ['--warn-text', '--panel', TEXT, 'a dead link\'s label'],
  ['--on-badge', '--badge-ok', TEXT, 'a run badge: ok'],
  ['--on-badge', '--badge-err', TEXT, 'a run badge: failed; the error count'],
  ['--on-badge', '--badge-accent', TEXT, 'a run badge: running'],
  ['--on-badge', '--badge-warn', TEXT, 'the warning count'],
  ['--on-primary', '--primary', TEXT, 'the primary button'],
  ['--on-primary', '--primary-hover', TEXT, 'the primary button under the pointer'],
  ['--text', '--order-badge', TEXT, 'a link\'s order badge'],
  ['--violet', '--panel', TEXT, 'a port\'s handle label, a loop\'s title'],
  ['--focus-ring', '--bg', UI, 'the focus ring on the canvas'],
  ['--focus-ring', '--panel', UI, 'the focus ring on a block or a control'],
];

describe('theme contrast (WCAG AA)', () => {
  const themes = themeTokens(css);

  it('reads both themes from styles.css', () => {
    expect(themes.light['--text']).toMatch(/^#/);
    expect(themes.dark['--text']).not.toBe(themes.light['--text']);
  });

  for (const name of ['light', 'dark'] as const) {
    for (const [fg, bg, least, where] of PAIRS) {
      it(`${name}: ${fg} on ${bg} ≥ ${least}:1 (${where})`, () => {
        const tokens = themes[name];
        expect(tokens[fg], `${fg} in the ${name} theme`).toBeDefined();
        expect(tokens[bg], `${bg} in the ${name} theme`).toBeDefined();
        const ratio = contrastRatio(tokens[fg], tokens[bg]);
        expect(ratio, `${fg} ${tokens[fg]} on ${bg} ${tokens[bg]}: ${ratio.toFixed(2)}:1`).toBeGreaterThanOrEqual(least);
      });
    }
  }

  it('measures as WCAG does', () => {
    expect(contrastRatio('#000000', '#ffffff')).toBeCloseTo(21, 5);
    expect(contrastRatio('#ffffff', '#ffffff')).toBeCloseTo(1, 5);
    // the failures the issue measured, before the fix
    expect(contrastRatio('#1d4ed8', '#1e293b')).toBeCloseTo(2.18, 1);
    expect(contrastRatio('#ffffff', '#60a5fa')).toBeCloseTo(2.54, 1);
  });
});
