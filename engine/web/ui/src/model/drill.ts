/**
 * Subdiagram drill-down: the trail of parents (breadcrumbs: Parent › child) and what a run shows on a child's canvas.
 * A child's steps are in its caller's run, addressed `sub/ask` (a Subdiagram `sub`, its child's block `ask`; deeper,
 * `sub/inner/ask`): the child's view of the run keeps those steps, by the child's own ids.
 */
import type { RunData, Step } from '../api/types';

/** A parent the trail went through: its file and the Subdiagram block drilled into. */
export interface Crumb {
  path: string;
  block: string;
}

/** The trail after drilling from `path`'s block `block` into its child. */
export function drillInto(crumbs: Crumb[], path: string, block: string): Crumb[] {
  return [...crumbs, { path, block }];
}

/** Back to the crumb at `index`: the file to open and the trail left above it. */
export function crumbBack(crumbs: Crumb[], index: number): { path: string; crumbs: Crumb[] } | null {
  const crumb = crumbs[index];
  return crumb ? { path: crumb.path, crumbs: crumbs.slice(0, index) } : null;
}

/** The address of the child shown now inside the run of the trail's first file (`sub/inner`); '' at the top. */
export function runAddress(crumbs: Crumb[]): string {
  return crumbs.map((c) => c.block).join('/');
}

/** The breadcrumbs' texts: each parent's file name, then the child's (the current file). */
export function crumbTexts(crumbs: Crumb[], current: string): string[] {
  const name = (p: string) => p.split('/').pop() ?? p;
  return [...crumbs.map((c) => name(c.path)), name(current)];
}

function within(address: string, block: string): string | null {
  const prefix = `${address}/`;
  return block.startsWith(prefix) ? block.slice(prefix.length) : null;
}

/**
 * The run as the child at `address` saw it: its steps (by its own ids; a grandchild's keep their `inner/ask`), the
 * blocks it reached, the links it took, the blocks that failed. The run's own variables and errors stay the caller's.
 */
export function childRun(run: RunData, address: string): RunData {
  if (!address) return run;
  const steps: Step[] = [];
  const blocks = new Set<string>();
  const links = new Set<string>();
  const failed = new Set<string>();
  for (const s of run.steps) {
    const own = within(address, s.block);
    if (own === null) continue;
    steps.push({ ...s, block: own, next: s.next === null ? null : (within(address, s.next) ?? s.next) });
    if (own.includes('/')) continue;
    blocks.add(own);
    const to = s.next === null ? null : within(address, s.next);
    if (to && !to.includes('/')) links.add(JSON.stringify([own, to]));
    if (s.status === 'failed') failed.add(own);
  }
  return {
    ...run, steps, blocks: [...blocks].sort(),
    links: [...links].map((l) => JSON.parse(l) as [string, string]),
    failed: [...failed].sort(), passes: {}, events: [],
  };
}

/** `childRun`, remembered for the last run and address (the canvas asks once a render). */
export function childRunMemo(): (run: RunData | null, address: string) => RunData | null {
  let last: { run: RunData | null; address: string; result: RunData | null } | null = null;
  return (run, address) => {
    if (last && last.run === run && last.address === address) return last.result;
    const result = run && address ? childRun(run, address) : run;
    last = { run, address, result };
    return result;
  };
}
