/**
 * A three-way merge of texts, line by line (node-diff3): what only one side changed is taken, what both changed
 * the same way is taken once, and what they changed differently is kept between git's conflict markers for the
 * user to settle in the merge view.
 */
import { diff3Merge } from 'node-diff3';

export interface MergedText {
  /** the merged text; conflicting regions between `<<<<<<< yours`, `=======` and `>>>>>>> theirs` */
  result: string;
  conflicts: number;
}

export const CONFLICT_START = '<<<<<<< yours';
export const CONFLICT_SPLIT = '=======';
export const CONFLICT_END = '>>>>>>> theirs';

type Region = { ok?: string[]; conflict?: { a: string[]; o: string[]; b: string[] } };

export function mergeTexts(yours: string, base: string, theirs: string): MergedText {
  const lines = (text: string) => text.split('\n');
  const regions = diff3Merge(lines(yours), lines(base), lines(theirs), { excludeFalseConflicts: true }) as Region[];
  const out: string[] = [];
  let conflicts = 0;
  for (const region of regions) {
    if (region.ok) out.push(...region.ok);
    else if (region.conflict) {
      conflicts++;
      out.push(CONFLICT_START, ...region.conflict.a, CONFLICT_SPLIT, ...region.conflict.b, CONFLICT_END);
    }
  }
  return { result: out.join('\n'), conflicts };
}

/** Whether a text still holds conflict markers (a merge the user has not settled). */
export function hasConflictMarkers(text: string): boolean {
  return text.split('\n').some((line) => line === CONFLICT_START || line === CONFLICT_END);
}
