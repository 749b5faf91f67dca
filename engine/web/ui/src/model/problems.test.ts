import { describe, expect, it } from 'vitest';
import { counts, fieldProblems } from './problems';
import type { Problem } from '../api/types';

const p = (block: string | null, field: string | null, severity: 'error' | 'warning' = 'error'): Problem =>
  ({ file: null, line: null, column: null, block, field, message: 'm', hint: null, code: 'invalid', severity });

describe('fieldProblems', () => {
  it('matches a field by prefix', () => {
    const all = [p('ask', 'with.temperature'), p('ask', 'with.temperature_x'), p('ask', 'with.history[1].role'), p('x', 'with.temperature'), p('ask', null)];
    expect(fieldProblems(all, 'ask', 'with.temperature')).toEqual([all[0]]);
    expect(fieldProblems(all, 'ask', 'with.history')).toEqual([all[2]]);
    expect(counts([...all, p(null, null, 'warning')])).toEqual({ errors: 5, warnings: 1 });
  });
});
