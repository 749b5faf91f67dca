import { describe, expect, it } from 'vitest';
import { hasConflictMarkers, mergeTexts } from './merge';

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
