/**
 * What a run's requests cost, as the run view shows it: each request step's `cost` (`{usd}`; `usd` null when the
 * model has no price) and `usage` (tokens per kind), summed per block and for the run. An unknown price is never
 * shown as $0: a sum with unknown parts is a lower bound ("≥ $0.0123, 2 steps unpriced"). A response answered from
 * the cache cost nothing (its `cost` is `{usd: 0}`) and shows $0.
 */
import type { Step } from '../api/types';

/** The steps' requests summed: known USD, how many requests had no price, tokens per kind. */
export interface CostSum {
  /** the steps that made a request */
  requests: number;
  /** what the priced ones cost */
  knownUsd: number;
  /** requests whose price is unknown (or whose trace has no cost) */
  unknown: number;
  /** requests answered from the response cache */
  cached: number;
  /** tokens per kind (`input_tokens`, `output_tokens`, `cache_write_tokens`, `cache_read_tokens`, `thinking_tokens`) */
  usage: Record<string, number>;
}

export function emptySum(): CostSum {
  return { requests: 0, knownUsd: 0, unknown: 0, cached: 0, usage: {} };
}

type CostFields = Pick<Step, 'cost' | 'usage' | 'tokens' | 'model' | 'cached'>;

/** Whether a step made a request (its trace told a model's call). */
export function madeRequest(step: CostFields): boolean {
  return step.cost != null || step.usage != null || step.tokens != null; // != : a field an older server left out too
}

/** A request step's cost in USD: a number, or null when its price is unknown; undefined for a step with no request. */
export function stepUsd(step: CostFields): number | null | undefined {
  if (!madeRequest(step)) return undefined;
  const usd = step.cost?.usd;
  return typeof usd === 'number' && Number.isFinite(usd) ? usd : null;
}

/** A step's tokens per kind: its `usage`, else the `[input, output]` pair older answers had. */
export function stepUsage(step: CostFields): Record<string, number> {
  if (step.usage) return step.usage;
  if (step.tokens) return { input_tokens: step.tokens[0], output_tokens: step.tokens[1] };
  return {};
}

/** Adds one step to a sum (in place). */
function add(sum: CostSum, step: CostFields): void {
  const usd = stepUsd(step);
  if (usd === undefined) return;
  sum.requests++;
  if (usd === null) sum.unknown++;
  else sum.knownUsd += usd;
  if (step.cached) sum.cached++;
  for (const [kind, count] of Object.entries(stepUsage(step))) {
    if (typeof count === 'number') sum.usage[kind] = (sum.usage[kind] ?? 0) + count;
  }
}

/** The run's cost: every request step's, nested runs' (a Subdiagram's child, a Loop's passes) included. */
export function sumCosts(steps: readonly CostFields[]): CostSum {
  const sum = emptySum();
  for (const s of steps) add(sum, s);
  return sum;
}

/** Each block's cost over all its steps (a block a loop ran several times: their sum); blocks with no request are left out. */
export function costsByBlock(steps: readonly (CostFields & Pick<Step, 'block'>)[]): Map<string, CostSum> {
  const byBlock = new Map<string, CostSum>();
  for (const s of steps) {
    if (!madeRequest(s)) continue;
    let sum = byBlock.get(s.block);
    if (!sum) byBlock.set(s.block, (sum = emptySum()));
    add(sum, s);
  }
  return byBlock;
}

const SIGNIFICANT = new Intl.NumberFormat('en-US', { maximumSignificantDigits: 4 });
const WHOLE = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const TINY = 0.0001;

/** USD with 4 significant digits, enough for a small request's sum: "$0.001235", "$12.35", "$1,235"; "<$0.0001" below. */
export function usdText(usd: number): string {
  if (!Number.isFinite(usd)) return '';
  if (usd === 0) return '$0';
  if (usd < 0) return `-${usdText(-usd)}`;
  if (usd < TINY) return '<$0.0001';
  return `$${usd >= 1000 ? WHOLE.format(usd) : SIGNIFICANT.format(usd)}`;
}

/** A count of tokens with thousands separators: 12345 → "12,345". */
export function tokenCount(n: number): string {
  return WHOLE.format(n);
}

/** How the run view names a token kind. */
const KIND_NAMES: ReadonlyArray<[string, string]> = [
  ['input_tokens', 'in'],
  ['output_tokens', 'out'],
  ['cache_write_tokens', 'cache write'],
  ['cache_read_tokens', 'cache read'],
  ['thinking_tokens', 'thinking'],
];

/** Tokens per kind as text: "in 1,281 · out 10 · cache read 2,048" (input and output always, the others when reported). */
export function usageText(usage: Record<string, number>): string {
  if (Object.keys(usage).length === 0) return '';
  const known = new Set(KIND_NAMES.map(([k]) => k));
  const parts = KIND_NAMES.filter(([k]) => k === 'input_tokens' || k === 'output_tokens' || usage[k] !== undefined)
    .map(([k, name]) => `${name} ${tokenCount(usage[k] ?? 0)}`);
  for (const [k, count] of Object.entries(usage)) {
    if (!known.has(k)) parts.push(`${k.replace(/_tokens$/, '').replace(/_/g, ' ')} ${tokenCount(count)}`);
  }
  return parts.join(' · ');
}

/** One step's cost: "$0.0012", "$0 (cached)", "cost unknown"; "" for a step that made no request. */
export function stepCostText(step: CostFields): string {
  const usd = stepUsd(step);
  if (usd === undefined) return '';
  if (usd === null) return 'cost unknown';
  return step.cached ? `${usdText(usd)} (cached)` : usdText(usd);
}

/**
 * A sum as text: "$0.0123"; "≥ $0.0123, 2 steps unpriced" when some prices are unknown (the known part is a lower
 * bound); "cost unknown" when none is known; "" when there was no request.
 */
export function sumText(sum: CostSum): string {
  if (sum.requests === 0) return '';
  if (sum.unknown === 0) return usdText(sum.knownUsd);
  if (sum.unknown === sum.requests) return 'cost unknown';
  return `≥ ${usdText(sum.knownUsd)}, ${sum.unknown} step${sum.unknown === 1 ? '' : 's'} unpriced`;
}

/** The badge on a block's node: its sum, short ("≥ $0.0012" when part is unknown), and its count of requests past one. */
export function badgeText(sum: CostSum): string {
  if (sum.requests === 0) return '';
  const money = sum.unknown === 0 ? usdText(sum.knownUsd) : sum.unknown === sum.requests ? 'cost unknown' : `≥ ${usdText(sum.knownUsd)}`;
  return sum.requests > 1 ? `${money} · ${sum.requests} calls` : money;
}

/** The badge's tooltip: the sum in full, its requests, and its tokens per kind. */
export function badgeTitle(sum: CostSum): string {
  if (sum.requests === 0) return '';
  const calls = `${sum.requests} request${sum.requests === 1 ? '' : 's'}${sum.cached ? `, ${sum.cached} cached` : ''}`;
  return `${sumText(sum)} — ${calls}; tokens ${usageText(sum.usage)}`;
}
