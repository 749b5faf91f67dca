import type { Problem } from '../api/types';

/** Problems of one block's field: `with.temperature` matches `with.temperature`, `with.temperature.x`, `with.history[2]`. */
export function fieldProblems(problems: Problem[], block: string, path: string): Problem[] {
  return problems.filter((p) => p.block === block && p.field !== null &&
    (p.field === path || p.field.startsWith(`${path}.`) || p.field.startsWith(`${path}[`)));
}

export function blockProblems(problems: Problem[], block: string): Problem[] {
  return problems.filter((p) => p.block === block);
}

export function counts(problems: Problem[]): { errors: number; warnings: number } {
  let errors = 0;
  let warnings = 0;
  for (const p of problems) if (p.severity === 'warning') warnings++; else errors++;
  return { errors, warnings };
}
