import { describe, expect, it } from 'vitest';
import type { Step } from '../api/types';
import { badgeText, costsByBlock, stepCostText, stepUsd, sumCosts, sumText, tokenCount, usageText, usdText } from './cost';

/** A step as GET /api/runs/{id} sends it: every field. */
function step(block: string, extra: Partial<Step> = {}): Step {
  return {
    number: 1, block, block_type: 'Set', offset_ms: 0, duration_ms: 1, status: 'succeeded', next: null, via: null, inputs: {},
    outputs: {}, set: {}, error: null, model: null, tokens: null, cost: null, usage: null, cached: false, called_tools: [],
    payloads: [], scores: {}, score_parts: {}, failed_tools: [], http_calls: [], passages: [], ...extra,
  };
}

function request(block: string, usd: number | null, usage: Record<string, number>, extra: Partial<Step> = {}): Step {
  return step(block, {
    block_type: 'ClaudeRequest', model: 'claude-sonnet-4-5', tokens: [usage.input_tokens ?? 0, usage.output_tokens ?? 0],
    cost: { usd }, usage, ...extra,
  });
}

describe('usdText', () => {
  it('shows 4 significant digits, enough for a small request', () => {
    expect(usdText(0.0012345)).toBe('$0.001235');
    expect(usdText(0.0012)).toBe('$0.0012');
    expect(usdText(0.1)).toBe('$0.1');
    expect(usdText(12.3456)).toBe('$12.35');
    expect(usdText(1234.56)).toBe('$1,235');
    expect(usdText(0.0001)).toBe('$0.0001');
  });
  it('says "<$0.0001" for a tiny sum, and $0 only for nothing spent', () => {
    expect(usdText(0.00001234)).toBe('<$0.0001');
    expect(usdText(0)).toBe('$0');
    expect(usdText(Number.NaN)).toBe('');
  });
});

describe('tokens', () => {
  it('writes counts with thousands separators', () => {
    expect(tokenCount(1234567)).toBe('1,234,567');
    expect(tokenCount(42)).toBe('42');
  });
  it('names each kind: input and output always, the cache and thinking kinds when reported', () => {
    expect(usageText({ input_tokens: 12345, output_tokens: 10 })).toBe('in 12,345 · out 10');
    expect(usageText({ output_tokens: 7, thinking_tokens: 1500, cache_read_tokens: 2048, input_tokens: 3, cache_write_tokens: 0 }))
      .toBe('in 3 · out 7 · cache write 0 · cache read 2,048 · thinking 1,500');
    expect(usageText({})).toBe('');
  });
});

describe('a step\'s cost', () => {
  it('is its USD; unknown (never $0) when the price is; $0 when the cache answered; nothing without a request', () => {
    expect(stepCostText(request('ask', 0.0012, { input_tokens: 281, output_tokens: 10 }))).toBe('$0.0012');
    expect(stepCostText(request('ask', null, { input_tokens: 281, output_tokens: 10 }))).toBe('cost unknown');
    expect(stepCostText(request('ask', 0, { input_tokens: 281, output_tokens: 10 }, { cached: true }))).toBe('$0 (cached)');
    expect(stepCostText(step('done'))).toBe('');
    expect(stepUsd(step('done'))).toBeUndefined();
  });
  it('is unknown for a request whose trace has no cost (older traces)', () => {
    const old = step('ask', { model: 'claude-sonnet-5-5', tokens: [281, 10] });
    expect(stepUsd(old)).toBeNull();
    expect(sumCosts([old]).usage).toEqual({ input_tokens: 281, output_tokens: 10 });
  });
});

describe('sums', () => {
  const steps = [
    step('start'),
    request('ask', 0.001, { input_tokens: 1000, output_tokens: 50, cache_read_tokens: 2000 }),
    step('dispatch'),
    request('ask', 0.0005, { input_tokens: 1200, output_tokens: 20 }),
    request('summarise', null, { input_tokens: 300, output_tokens: 30 }),
    request('summarise', null, { input_tokens: 310, output_tokens: 31 }),
    request('cheap', 0, { input_tokens: 10, output_tokens: 1 }, { cached: true }),
    step('done'),
  ];

  it('sum each block over its steps (a loop\'s), with the count, and leave out blocks with no request', () => {
    const byBlock = costsByBlock(steps);
    expect([...byBlock.keys()]).toEqual(['ask', 'summarise', 'cheap']);
    const ask = byBlock.get('ask')!;
    expect(ask).toMatchObject({ requests: 2, unknown: 0, cached: 0 });
    expect(ask.knownUsd).toBeCloseTo(0.0015, 12);
    expect(ask.usage).toEqual({ input_tokens: 2200, output_tokens: 70, cache_read_tokens: 2000 });
    expect(badgeText(ask)).toBe('$0.0015 · 2 calls');
    expect(badgeText(byBlock.get('summarise')!)).toBe('cost unknown · 2 calls');
    expect(badgeText(byBlock.get('cheap')!)).toBe('$0');
  });

  it('give the run\'s total honestly: a lower bound naming the unpriced steps', () => {
    const total = sumCosts(steps);
    expect(total).toMatchObject({ requests: 5, unknown: 2, cached: 1 });
    expect(sumText(total)).toBe('≥ $0.0015, 2 steps unpriced');
    expect(sumText(sumCosts(steps.slice(0, 4)))).toBe('$0.0015');
    expect(sumText(sumCosts(steps.slice(4, 5)))).toBe('cost unknown');
    expect(sumText(sumCosts([request('a', 0.00001, {}), request('b', null, {})]))).toBe('≥ <$0.0001, 1 step unpriced');
    expect(sumText(sumCosts([step('start')]))).toBe('');
  });
});
