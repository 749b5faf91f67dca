import { describe, expect, it } from 'vitest';
import { failedBlocks, linkText, msText, stepToolCalls, tokensText } from './run';

describe('run JSON as the server sends it', () => {
  it('reads `failed` as null, one block id, or a list (a null used to crash the canvas after every good run)', () => {
    expect(failedBlocks({ failed: null })).toEqual([]);
    expect(failedBlocks({ failed: 'ask' })).toEqual(['ask']);
    expect(failedBlocks({ failed: ['ask', 'dispatch'] })).toEqual(['ask', 'dispatch']);
    expect(failedBlocks({} as { failed: null })).toEqual([]);
    expect(failedBlocks(null)).toEqual([]);
  });
  it('writes [input, output] tokens as words, and still reads a mapping or a number', () => {
    expect(tokensText([281, 10])).toBe('in 281 · out 10');
    expect(tokensText({ input_tokens: 5, output_tokens: 7 })).toBe('input 5 · output 7');
    expect(tokensText(12)).toBe('12 tokens');
    expect(tokensText(null)).toBe('');
  });
  it('names the link a step took from `next` and `via`', () => {
    expect(linkText({ next: 'dispatch', via: 'next' })).toBe('dispatch');
    expect(linkText({ next: 'apologise', via: 'on_error' })).toBe('apologise (on_error)');
    expect(linkText({ next: null, via: null })).toBeNull();
    expect(linkText({ link: 'done' })).toBe('done');
  });
  it('lists the tools a step called', () => {
    expect(stepToolCalls({ called_tools: ['get_order_status'] })).toEqual(['get_order_status']);
    expect(stepToolCalls({ called_tools: [], tool_calls: [{ name: 'x' }] })).toEqual([{ name: 'x' }]);
    expect(stepToolCalls({})).toEqual([]);
  });
  it('rounds durations', () => {
    expect(msText(8.7338)).toBe('8.7');
    expect(msText(123.6)).toBe('124');
    expect(msText(null)).toBe('');
  });
});
