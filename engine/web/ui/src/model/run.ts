/**
 * Reading the server's run JSON (GET /api/runs/{id}) for display: `failed` is the one block whose error ended the
 * run (or null), or every failed block when on_error handled one; each step's `tokens` is `[input, output]`, the
 * link it took `next` (+ `via`), the tools it called `called_tools`.
 */
import type { RunData, Step } from '../api/types';
import { tokenCount } from './cost';

/** The blocks that failed the run, whatever form `failed` came in (null, one id, a list). */
export function failedBlocks(data: Pick<RunData, 'failed'> | null | undefined): string[] {
  const failed = data?.failed;
  if (typeof failed === 'string') return failed ? [failed] : [];
  return Array.isArray(failed) ? failed : [];
}

/** Tokens as text: `[input, output]` → "in 1,281 · out 10". */
export function tokensText(tokens: Step['tokens']): string {
  if (!tokens) return '';
  const [input, output] = tokens;
  return `in ${tokenCount(input)} · out ${tokenCount(output)}`;
}

/** The link a step took: "dispatch" or "apologise (on_error)"; null when it took none. */
export function linkText(step: Pick<Step, 'next' | 'via'>): string | null {
  if (!step.next) return null;
  return step.via && step.via !== 'next' ? `${step.next} (${step.via})` : step.next;
}

/** Milliseconds for a table cell: whole numbers from 10 ms up, one decimal below. */
export function msText(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '';
  return ms >= 10 ? String(Math.round(ms)) : String(Math.round(ms * 10) / 10);
}

/** When a run started (seconds since the epoch), for the list of past runs. */
export function startedText(started: number | null): string {
  if (started === null) return '';
  const d = new Date(started * 1000);
  return d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}
