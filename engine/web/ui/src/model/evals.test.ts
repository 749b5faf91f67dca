import { describe, expect, it } from 'vitest';
import type { EvalReport } from '../api/types';
import { compareCases, compareScorers, deltaText, inOrder, scoreText, sparkline, tally } from './evals';

function report(scores: Record<string, number | null>): EvalReport {
  const values = Object.values(scores).filter((s): s is number => s !== null);
  return {
    summary: { score: values.reduce((a, b) => a + b, 0) / values.length, cases: values.length, passed: 0, failed: 0,
      tokens: null, latency_ms: {}, scorers: {} },
    cases: Object.entries(scores).map(([id, score]) => ({ id, score, scores: {}, status: 'succeeded', run_id: null, reason: null })),
  };
}

describe('comparing two eval runs', () => {
  it('lists every case with both scores and the delta, the cases that got worse first', () => {
    const before = report({ a: 1, b: 0.5, c: 0, d: 1, gone: 1 });
    const after = report({ a: 0.25, b: 1, c: 0, d: 0.5, added: 1 });
    expect(compareCases(before, after)).toEqual([
      { id: 'a', before: 1, after: 0.25, delta: -0.75 },
      { id: 'd', before: 1, after: 0.5, delta: -0.5 },
      { id: 'c', before: 0, after: 0, delta: 0 },
      { id: 'b', before: 0.5, after: 1, delta: 0.5 },
      { id: 'added', before: null, after: 1, delta: null },
      { id: 'gone', before: 1, after: null, delta: null },
    ]);
  });
  it('gives no delta for a case either run did not score, and orders ties by case id', () => {
    const rows = compareCases(report({ z: 0.5, y: 0.5, x: null }), report({ z: 1, y: 1, x: 1 }));
    expect(rows.map((r) => [r.id, r.delta])).toEqual([['y', 0.5], ['z', 0.5], ['x', null]]);
  });
  it('counts the cases that got better, worse, or stayed', () => {
    const rows = compareCases(report({ a: 1, b: 0.5, c: 0, d: 1 }), report({ a: 0, b: 1, c: 0, e: 1 }));
    expect(tally(rows)).toEqual({ better: 1, worse: 1, same: 1 });
  });
  it('gives each scorer\'s mean in both runs and its change, a scorer only the older run had last', () => {
    const before = { ...report({ a: 1 }), summary: { ...report({ a: 1 }).summary, scorers: { helpful: 0.5, gone: 1, exact: 1 } } };
    const after = { ...report({ a: 1 }), summary: { ...report({ a: 1 }).summary, scorers: { exact: 0.75, helpful: 1, added: null } } };
    expect(compareScorers(before, after)).toEqual([
      { id: 'exact', before: 1, after: 0.75, delta: -0.25 },
      { id: 'helpful', before: 0.5, after: 1, delta: 0.5 },
      { id: 'added', before: null, after: null, delta: null },
      { id: 'gone', before: 1, after: null, delta: null },
    ]);
  });
  it('puts the two picked runs in time order, whichever was picked first', () => {
    const older = { eval_id: 'e1', created: 100 };
    const newer = { eval_id: 'e2', created: 200 };
    expect(inOrder(newer, older)).toEqual([older, newer]);
    expect(inOrder(older, newer)).toEqual([older, newer]);
    expect(inOrder({ eval_id: 'b', created: 5 }, { eval_id: 'a', created: 5 }).map((e) => e.eval_id)).toEqual(['a', 'b']);
  });
});

describe('showing scores', () => {
  it('writes scores and signed deltas with three decimals, a dash for none', () => {
    expect([scoreText(0.75), scoreText(null), scoreText(undefined)]).toEqual(['0.750', '–', '–']);
    expect([deltaText(0.25), deltaText(-0.5), deltaText(0), deltaText(-0.0001), deltaText(null)])
      .toEqual(['+0.250', '−0.500', '±0.000', '±0.000', '–']);
  });
  it('draws the history oldest first, 0 at the bottom and 1 at the top, leaving out runs without a score', () => {
    const evals = [
      { eval_id: 'c', created: 300, score: 1 },
      { eval_id: 'a', created: 100, score: 0 },
      { eval_id: 'x', created: 150, score: null },
      { eval_id: 'b', created: 200, score: 0.5 },
    ];
    expect(sparkline(evals, 100, 20)).toEqual([[0, 20], [50, 10], [100, 0]]);
    expect(sparkline([{ eval_id: 'a', created: 1, score: 0.25 }], 100, 20)).toEqual([[50, 15]]);
    expect(sparkline([], 100, 20)).toEqual([]);
  });
});
