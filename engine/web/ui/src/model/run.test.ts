import { describe, expect, it } from 'vitest';
import { failedBlocks, linkText, msText, startedText, tokensText } from './run';

describe('run JSON as the server sends it', () => {
  it('reads `failed` as null, one block id, or a list (a null used to crash the canvas after every good run)', () => {
    expect(failedBlocks({ failed: null })).toEqual([]);
    expect(failedBlocks({ failed: 'ask' })).toEqual(['ask']);
    expect(failedBlocks({ failed: ['ask', 'dispatch'] })).toEqual(['ask', 'dispatch']);
    expect(failedBlocks(null)).toEqual([]);
  });
  it('writes [input, output] tokens as words', () => {
    expect(tokensText([281, 10])).toBe('in 281 · out 10');
    expect(tokensText(null)).toBe('');
  });
  it('names the link a step took from `next` and `via`', () => {
    expect(linkText({ next: 'dispatch', via: 'next' })).toBe('dispatch');
    expect(linkText({ next: 'apologise', via: 'on_error' })).toBe('apologise (on_error)');
    expect(linkText({ next: null, via: null })).toBeNull();
  });
  it('rounds durations', () => {
    expect(msText(8.7338)).toBe('8.7');
    expect(msText(123.6)).toBe('124');
    expect(msText(null)).toBe('');
  });
  it('reads when a run started as seconds since the epoch (not as a date text)', () => {
    const text = startedText(Date.UTC(2025, 4, 17, 12, 0, 0) / 1000);
    // read as milliseconds it would be Jan 21, 1970 (issue 29, item 5)
    expect(text).toMatch(/May/);
    expect(text).not.toMatch(/Jan/);
    expect(startedText(null)).toBe('');
  });
});
