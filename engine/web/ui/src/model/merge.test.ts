import { describe, expect, it } from 'vitest';
import { hasConflictMarkers, mergeTexts, rebaseText } from './merge';

const base = 'diagram: a\nblocks:\n  - id: start\n    type: Start\n    next: done\n  - id: done\n    type: Set\n';

describe('mergeTexts', () => {
  it('takes each side where only it changed: another tab\'s saved change is kept beside yours', () => {
    const yours = base.replace('diagram: a', 'diagram: mine');
    const theirs = base.replace('    type: Set\n', '    type: Set\n    set: {x: 1}\n');
    const merged = mergeTexts(yours, base, theirs);
    expect(merged.conflicts).toBe(0);
    expect(merged.result).toContain('diagram: mine');
    expect(merged.result).toContain('set: {x: 1}');
  });

  it('marks what both changed differently', () => {
    const merged = mergeTexts(base.replace('next: done', 'next: a'), base, base.replace('next: done', 'next: b'));
    expect(merged.conflicts).toBe(1);
    expect(merged.result).toContain('<<<<<<< yours\n    next: a\n=======\n    next: b\n>>>>>>> theirs');
    expect(hasConflictMarkers(merged.result)).toBe(true);
    expect(hasConflictMarkers(base)).toBe(false);
  });
});

describe('rebaseText: keys typed in the YAML pane put into the document\'s newer text', () => {
  const fresh = 'diagram: fresh\nblocks:\n  - id: start\n    type: Start\n';
  const described = fresh.replace('diagram: fresh\n', 'diagram: fresh\ndescription: Typed in the form\n');

  it('keeps both a keystroke and a form\'s edit on the next line, to the character (a line merge would collide)', () => {
    const typed = fresh.replace('diagram: fresh', 'diagram: fresh-typed');
    expect(mergeTexts(typed, fresh, described).conflicts).toBe(1);
    expect(rebaseText(fresh, typed, described)).toEqual({
      result: 'diagram: fresh-typed\ndescription: Typed in the form\nblocks:\n  - id: start\n    type: Start\n', conflicts: 0 });
  });

  it('keeps keys typed after the edit, and inside the same line apart from it', () => {
    const typed = `${fresh}    next: done\n`;
    expect(rebaseText(fresh, typed, described).result).toBe(`${described}    next: done\n`);
    const base = 'inputs: {a: 1, b: 2}\n';
    expect(rebaseText(base, 'inputs: {a: 10, b: 2}\n', 'inputs: {a: 1, b: 3}\n').result).toBe('inputs: {a: 10, b: 3}\n');
  });

  it('is either side alone when the other changed nothing', () => {
    expect(rebaseText(fresh, fresh, described).result).toBe(described);
    expect(rebaseText(fresh, described, fresh).result).toBe(described);
  });

  it('makes every change of both sides, those on one line to the character where they are apart there', () => {
    const base = 'a: 1\nb: 2\nc: 3\n';
    expect(rebaseText(base, 'a: 10\nb: 2\nc: 30\n', 'a: 1\nb: 20\nc: 3\n')).toEqual({ result: 'a: 10\nb: 20\nc: 30\n', conflicts: 0 });
    expect(rebaseText(base, 'a: 1\nb: 2\nnew: 4\nc: 3\n', 'a: 1\nb: 2\nc: 3\nd: 5\n').result).toBe('a: 1\nb: 2\nnew: 4\nc: 3\nd: 5\n');
    const line = 'x: {a: 1, b: 2}\nlast: 0\n';
    expect(rebaseText(line, 'x: {a: 10, b: 2}\nlast: 9\n', 'x: {a: 1, b: 3}\nlast: 0\n').result).toBe('x: {a: 10, b: 3}\nlast: 9\n');
  });

  it('keeps both sides of what overlaps between conflict markers: nothing is dropped', () => {
    const base = 'a: 1\nb: 2\nc: 3';
    const collided = rebaseText(base, 'a: 1\nb: typed\nc: 3', 'a: 1\nb: form\nc: 3');
    expect(collided).toEqual({ result: 'a: 1\n<<<<<<< yours\nb: typed\n=======\nb: form\n>>>>>>> theirs\nc: 3', conflicts: 1 });
    expect(hasConflictMarkers(collided.result)).toBe(true);
  });

  it('keeps changes at the very start and end of the text, and a text that starts with a blank line', () => {
    expect(rebaseText('\na: 1\nb: 2', '# typed\n\na: 1\nb: 2', '\na: 1\nb: 3').result).toBe('# typed\n\na: 1\nb: 3');
    expect(rebaseText('\na: 1\n', 'x\na: 1\n', '\na: 2\n').result).toBe('x\na: 2\n');
  });

  it('takes a text both sides made alike once', () => {
    expect(rebaseText(fresh, described, described)).toEqual({ result: described, conflicts: 0 });
  });
});
