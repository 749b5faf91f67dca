/**
 * Runs you can search (issue 43): the runs list's filters as the server's query (status, date, block reached, error
 * type, text in the inputs), and two runs side by side: where their paths part and which variables differ.
 */
import type { RunData } from '../api/types';

export interface RunFilter {
  status: string;
  since: string;
  until: string;
  block: string;
  error: string;
  text: string;
}

export const NO_FILTER: RunFilter = { status: '', since: '', until: '', block: '', error: '', text: '' };

/** The query string the runs route takes ('' with no filter). */
export function filterQuery(filter: RunFilter): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(filter)) if (v.trim()) params.set(k, v.trim());
  return params.toString();
}

export function filtering(filter: RunFilter): boolean {
  return Object.values(filter).some((v) => v.trim() !== '');
}

/** One row of the path's comparison: the block each run took at that point ('' where one took none). */
export interface PathRow {
  left: string;
  right: string;
  same: boolean;
}

/** The two runs' paths (their steps' blocks, in order) aligned by their longest common part. */
export function diffPaths(left: string[], right: string[]): PathRow[] {
  const n = left.length;
  const m = right.length;
  const common: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      common[i][j] = left[i] === right[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const rows: PathRow[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && left[i] === right[j]) {
      rows.push({ left: left[i++], right: right[j++], same: true });
    } else if (j >= m || (i < n && common[i + 1][j] >= common[i][j + 1])) {
      rows.push({ left: left[i++], right: '', same: false });
    } else {
      rows.push({ left: '', right: right[j++], same: false });
    }
  }
  return rows;
}

export interface VariableRow {
  name: string;
  left: unknown;
  right: unknown;
  same: boolean;
}

/** Each variable of either run, with both values; differing ones first, then by name. */
export function diffVariables(left: Record<string, unknown> | null, right: Record<string, unknown> | null): VariableRow[] {
  const names = [...new Set([...Object.keys(left ?? {}), ...Object.keys(right ?? {})])].sort();
  const rows = names.map((name) => {
    const l = left?.[name];
    const r = right?.[name];
    return { name, left: l, right: r, same: JSON.stringify(l) === JSON.stringify(r) };
  });
  return [...rows.filter((r) => !r.same), ...rows.filter((r) => r.same)];
}

export interface RunComparison {
  path: PathRow[];
  /** the first step where the paths part (-1: the same path) */
  parted: number;
  variables: VariableRow[];
  /** whether both runs' variables are known (the page started them) */
  variablesKnown: boolean;
}

export function compareRuns(left: RunData, right: RunData): RunComparison {
  const path = diffPaths(left.steps.map((s) => s.block), right.steps.map((s) => s.block));
  return {
    path, parted: path.findIndex((r) => !r.same),
    variables: diffVariables(left.variables, right.variables),
    variablesKnown: left.variables !== null && right.variables !== null,
  };
}
