/**
 * Reading the server's run JSON (GET /api/runs/{id}) for display. The server sends `failed` as the one
 * block whose error ended the run (or null), each step's `tokens` as `[input, output]`, the link taken as
 * `next` (+ `via`), and the names of the tools a request block called as `called_tools`; older shapes
 * (a list of failed blocks, a tokens mapping, `link`, `tool_calls`) are read too.
 */
import type { RunData, RunStep } from '../api/types';

/** The blocks that failed the run, whatever form `failed` came in (null, one id, a list). */
export function failedBlocks(data: Pick<RunData, 'failed'> | null | undefined): string[] {
  const failed: unknown = data?.failed;
  if (typeof failed === 'string') return failed ? [failed] : [];
  if (Array.isArray(failed)) return failed.filter((f): f is string => typeof f === 'string');
  return [];
}

/** Tokens as text: `[input, output]` → "in 281 · out 10"; a mapping → its entries; a number → "N tokens". */
export function tokensText(tokens: unknown): string {
  if (tokens === null || tokens === undefined) return '';
  if (typeof tokens === 'number') return `${tokens} tokens`;
  if (Array.isArray(tokens)) {
    const [input, output] = tokens;
    return [input !== undefined && input !== null ? `in ${String(input)}` : '', output !== undefined && output !== null ? `out ${String(output)}` : '']
      .filter(Boolean).join(' · ');
  }
  if (typeof tokens === 'object') {
    return Object.entries(tokens as Record<string, unknown>).map(([k, v]) => `${k.replace(/_tokens$/, '')} ${String(v)}`).join(' · ');
  }
  return String(tokens);
}

/** The link a step took: "dispatch" or "apologise (on_error)"; null when it took none. */
export function linkText(step: Pick<RunStep, 'next' | 'via' | 'link'>): string | null {
  if (typeof step.next === 'string' && step.next) {
    return step.via && step.via !== 'next' ? `${step.next} (${step.via})` : step.next;
  }
  const link = step.link;
  if (link === undefined || link === null || link === '') return null;
  return typeof link === 'string' ? link : JSON.stringify(link);
}

/** The tools a step called (names, or the calls themselves). */
export function stepToolCalls(step: Pick<RunStep, 'called_tools' | 'tool_calls'>): unknown[] {
  for (const v of [step.called_tools, step.tool_calls]) if (Array.isArray(v) && v.length) return v;
  return [];
}

/** Milliseconds for a table cell: whole numbers from 10 ms up, one decimal below. */
export function msText(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '';
  return ms >= 10 ? String(Math.round(ms)) : String(Math.round(ms * 10) / 10);
}
