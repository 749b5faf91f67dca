/** error_level / message_level: the block's own value, or Default showing what it inherits (compiled.levels). */
import { useId } from 'react';
import type { EffectiveLevel, Problem } from '../../api/types';
import { FieldRow } from './FieldRow';

export const LEVELS: Record<'error_level' | 'message_level', string[]> = {
  error_level: ['Ignore', 'Handle'],
  message_level: ['Release', 'Debug', 'Detailed'],
};

export function defaultOptionText(effective: EffectiveLevel | undefined, own: boolean): string {
  if (!effective || own) return 'Default';
  return `Default → ${effective.value} (from ${effective.from})`;
}

export function LevelPicker({ name, label, value, effective, onChange, problems }: {
  name: 'error_level' | 'message_level'; label: string; value: unknown; effective?: EffectiveLevel;
  onChange: (v: string | undefined) => void; problems: Problem[];
}) {
  const id = useId();
  const own = value !== undefined;
  const options = LEVELS[name];
  const current = value === undefined ? '' : String(value);
  return (
    <FieldRow htmlFor={id} label={label} problems={problems}
      description={own && effective ? `effective: ${effective.value} (from ${effective.from})` : undefined}>
      <select id={id} data-testid={`field-${name}`} value={current} onChange={(e) => onChange(e.target.value || undefined)}>
        <option value="">{defaultOptionText(effective, own)}</option>
        {current !== '' && !options.includes(current) && <option value={current}>{current} (as written)</option>}
        {options.map((o) => <option key={o} value={o}>{o}</option>)}
      </select>
    </FieldRow>
  );
}
