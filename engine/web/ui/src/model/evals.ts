/** The Evaluations tab's arithmetic: two recorded eval runs side by side (per case, the cases that got worse first),
 * and the score history as a sparkline's points. */
import type { EvalListed, EvalReport } from '../api/types';

/** One case of two eval runs: its score in each (null where that run lacks the case or gave none), and the change. */
export interface CaseDelta {
  id: string;
  before: number | null;
  after: number | null;
  /** after − before; null unless both scored the case */
  delta: number | null;
}

/** Two picked eval runs in time order: the older is the base, the newer is compared with it. */
export function inOrder<T extends Pick<EvalListed, 'created' | 'eval_id'>>(a: T, b: T): [T, T] {
  const older = a.created < b.created || (a.created === b.created && a.eval_id < b.eval_id);
  return older ? [a, b] : [b, a];
}

/** Every case of either run with both scores and the delta: those that got worse first (the largest drop on top),
 * then the rest by delta; cases only one run has (no delta) last; ties by case id. */
export function compareCases(before: EvalReport, after: EvalReport): CaseDelta[] {
  const old = new Map(before.cases.map((c) => [c.id, c.score]));
  const now = new Map(after.cases.map((c) => [c.id, c.score]));
  const ids = [...new Set([...old.keys(), ...now.keys()])];
  const rows = ids.map((id) => {
    const b = old.get(id) ?? null;
    const a = now.get(id) ?? null;
    return { id, before: b, after: a, delta: a !== null && b !== null ? a - b : null };
  });
  return rows.sort((x, y) => {
    if (x.delta === null || y.delta === null) {
      if (x.delta !== y.delta) return x.delta === null ? 1 : -1;
    } else if (x.delta !== y.delta) {
      return x.delta - y.delta;
    }
    return x.id < y.id ? -1 : x.id > y.id ? 1 : 0;
  });
}

/** Each scorer's mean score in both runs and the change, in the newer run's order (a scorer only the older had
 * last). */
export function compareScorers(before: EvalReport, after: EvalReport): CaseDelta[] {
  const old = before.summary.scorers;
  const now = after.summary.scorers;
  const ids = [...new Set([...Object.keys(now), ...Object.keys(old)])];
  return ids.map((id) => {
    const b = old[id] ?? null;
    const a = now[id] ?? null;
    return { id, before: b, after: a, delta: a !== null && b !== null ? a - b : null };
  });
}

/** How many cases got better, worse, or stayed (a change under `epsilon` is no change). */
export function tally(rows: CaseDelta[], epsilon = 1e-9): { better: number; worse: number; same: number } {
  let better = 0, worse = 0, same = 0;
  for (const r of rows) {
    if (r.delta === null) continue;
    if (r.delta > epsilon) better += 1;
    else if (r.delta < -epsilon) worse += 1;
    else same += 1;
  }
  return { better, worse, same };
}

/** A score as the tab shows it: three decimals, or a dash for none. */
export function scoreText(score: number | null | undefined): string {
  return score === null || score === undefined ? '–' : score.toFixed(3);
}

/** A delta with its sign (+0.250, −0.500, ±0.000), or a dash for none. */
export function deltaText(delta: number | null): string {
  if (delta === null) return '–';
  if (Math.abs(delta) < 5e-4) return '±0.000';
  return `${delta > 0 ? '+' : '−'}${Math.abs(delta).toFixed(3)}`;
}

/** The scored evals oldest first as points of a `width`×`height` sparkline (score 0 at the bottom, 1 at the top;
 * evenly spaced, as runs are not evenly timed). */
export function sparkline(evals: Pick<EvalListed, 'created' | 'score' | 'eval_id'>[], width: number, height: number): Array<[number, number]> {
  const scored = evals.filter((e) => e.score !== null).sort((a, b) => a.created - b.created || (a.eval_id < b.eval_id ? -1 : 1));
  if (scored.length === 0) return [];
  const step = scored.length > 1 ? width / (scored.length - 1) : 0;
  return scored.map((e, i) => {
    const score = Math.min(1, Math.max(0, e.score as number));
    return [scored.length > 1 ? i * step : width / 2, height - score * height];
  });
}
