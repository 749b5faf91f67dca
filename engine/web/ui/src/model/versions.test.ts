import { describe, expect, it } from 'vitest';
import { lineDiff, savedText } from './versions';

describe('version history', () => {
  it('shows what restoring a version changes, with a little context and long unchanged runs cut', () => {
    const now = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'label: Finished', 'z'].join('\n') + '\n';
    const older = now.replace('label: Finished', 'label: Done');
    expect(lineDiff(now, older).split('\n')).toEqual([
      '@@ 6 unchanged lines', ' g', ' h', '-label: Finished', '+label: Done', ' z',
    ]);
    expect(lineDiff(now, now)).toBe('');
    expect(lineDiff('', 'x: 1\n')).toBe('+x: 1');
  });
  it('reads when a version was saved as seconds since the epoch', () => {
    const text = savedText(Date.UTC(2025, 4, 17, 12, 0, 0) / 1000);
    expect(text).toMatch(/May/);
    expect(text).not.toMatch(/Jan/);
  });
});
