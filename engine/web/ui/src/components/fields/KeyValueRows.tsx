/** A mapping edited as rows: name → value (values typed as YAML/JSON scalars, or templates). */
import { useState } from 'react';
import { formatScalar, parseScalar } from '../../model/scalars';
import { uniqueId } from '../../model/ops';
import { TemplateInput } from './TemplateInput';

export interface KeyValueRowsProps {
  label: string;
  value: unknown;
  onChange: (value: Record<string, unknown> | undefined) => void;
  testId?: string;
  /** values are template strings (the `set` rows) rather than scalars */
  templates?: boolean;
  names?: string[];
  keyLabel?: string;
  valueLabel?: string;
  addLabel?: string;
}

function renameKeyIn(obj: Record<string, unknown>, from: string, to: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => (k === from ? [to, v] : [k, v])));
}

export function KeyValueRows({ label, value, onChange, testId, templates, names = [], keyLabel = 'Name', valueLabel = 'Value', addLabel }: KeyValueRowsProps) {
  const obj = value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  const entries = Object.entries(obj);
  const [keyDrafts, setKeyDrafts] = useState<Record<number, string>>({});
  const [valueDrafts, setValueDrafts] = useState<Record<number, string>>({});
  const [keyError, setKeyError] = useState<Record<number, string>>({});

  const commitKey = (i: number, from: string) => {
    const to = (keyDrafts[i] ?? from).trim();
    setKeyDrafts((d) => { const c = { ...d }; delete c[i]; return c; });
    setKeyError((d) => { const c = { ...d }; delete c[i]; return c; });
    if (to === from) return;
    if (!to) { setKeyError((d) => ({ ...d, [i]: 'a name is needed' })); return; }
    if (to in obj) { setKeyError((d) => ({ ...d, [i]: `'${to}' is already there` })); return; }
    onChange(renameKeyIn(obj, from, to));
  };

  const setValue = (key: string, v: unknown) => onChange({ ...obj, [key]: v });
  const remove = (key: string) => {
    const copy = { ...obj };
    delete copy[key];
    onChange(Object.keys(copy).length ? copy : undefined);
  };

  return (
    <div className="kv" data-testid={testId}>
      {entries.length > 0 && (
        <table className="grid">
          <thead>
            <tr><th scope="col">{keyLabel}</th><th scope="col">{valueLabel}</th><th scope="col"><span className="sr-only">Actions</span></th></tr>
          </thead>
          <tbody>
            {entries.map(([k, v], i) => (
              <tr key={i}>
                <td className="kv__key">
                  <input
                    aria-label={`${label} ${keyLabel.toLowerCase()} ${i + 1}`}
                    value={keyDrafts[i] ?? k}
                    spellCheck={false}
                    aria-invalid={!!keyError[i] || undefined}
                    title={keyError[i]}
                    onChange={(e) => setKeyDrafts((d) => ({ ...d, [i]: e.target.value }))}
                    onBlur={() => commitKey(i, k)}
                    onKeyDown={(e) => { if (e.key === 'Enter') (e.target as HTMLInputElement).blur(); }}
                  />
                  {keyError[i] && <div className="inline-error">{keyError[i]}</div>}
                </td>
                <td>
                  {templates ? (
                    <TemplateInput ariaLabel={`${label} ${k}`} value={typeof v === 'string' ? v : formatScalar(v)} names={names}
                      testId={testId ? `${testId}-${k}` : undefined}
                      onChange={(t) => setValue(k, typeof v === 'string' || t.includes('{{') ? t : parseScalar(t))} />
                  ) : (
                    <input
                      aria-label={`${label} ${k}`}
                      data-testid={testId ? `${testId}-${k}` : undefined}
                      value={valueDrafts[i] ?? formatScalar(v)}
                      spellCheck={false}
                      onChange={(e) => {
                        setValueDrafts((d) => ({ ...d, [i]: e.target.value }));
                        setValue(k, parseScalar(e.target.value));
                      }}
                      onBlur={() => setValueDrafts((d) => { const c = { ...d }; delete c[i]; return c; })}
                    />
                  )}
                </td>
                <td className="grid__actions">
                  <button type="button" className="icon-btn" aria-label={`Remove ${k}`} title="remove" onClick={() => remove(k)}>×</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <button type="button" className="btn btn--small" onClick={() => onChange({ ...obj, [uniqueId('name', Object.keys(obj))]: '' })}>
        {addLabel ?? `+ Add ${label.toLowerCase()}`}
      </button>
    </div>
  );
}
