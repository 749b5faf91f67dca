/** error_level / message_level: the block's own value, or the default showing what it inherits (compiled.levels). */
import { useId } from 'react';
import type { EffectiveLevel, LevelNames, Problem } from '../../api/types';
import { FieldRow } from './FieldRow';

/** The label of a level key: `error_level` → "Error level". */
export function levelLabel(key: string): string {
  const words = key.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export function defaultOptionText(names: LevelNames, effective: EffectiveLevel | undefined, own: boolean): string {
  if (!effective || own) return names.default;
  return `${names.default} → ${effective.value} (from ${effective.from})`;
}

/** The level names come from the server (GET /api/format): the default, which inherits, and the others. */
export function LevelPicker({ name, names, value, effective, onChange, problems }: {
  name: string; names: LevelNames; value: unknown; effective?: EffectiveLevel;
  onChange: (v: string | undefined) => void; problems: Problem[];
}) {
  const id = useId();
  const own = value !== undefined;
  const options = names.names.filter((n) => n !== names.default);
  const current = value === undefined ? '' : String(value);
  return (
    <FieldRow htmlFor={id} label={levelLabel(name)} problems={problems}
      description={own && effective ? `effective: ${effective.value} (from ${effective.from})` : undefined}>
      <select id={id} data-testid={`field-${name}`} value={current} onChange={(e) => onChange(e.target.value || undefined)}>
        <option value="">{defaultOptionText(names, effective, own)}</option>
        {current !== '' && !options.includes(current) && <option value={current}>{current} (as written)</option>}
        {options.map((o) => <option key={o} value={o}>{o}</option>)}
      </select>
    </FieldRow>
  );
}
