/** A waiting run's question: its Wait's prompt and a form drawn from the Wait's JSON Schema; sending it resumes the
 * run (the run panel then follows it), and what the server finds wrong with the answer is listed under it. */
import { useId, useMemo, useState } from 'react';
import type { Waiting } from '../../api/types';
import { answerFrom, initialTyped, waitFields, type Typed } from '../../model/waitAnswer';
import { useStudio } from '../../store';
import { useKeptState } from '../keptState';

/** `keptAs` names the run and its request: the answer typed so far is kept while another tab shows. */
export function WaitForm({ waiting, keptAs }: { waiting: Waiting; keptAs: string }) {
  const fields = useMemo(() => waitFields(waiting.form), [waiting.form]);
  const [typed, setTyped] = useKeptState<Typed>(`wait-answer:${keptAs}`, () => (fields.length ? initialTyped(fields) : { '': '' }));
  const [local, setLocal] = useState<string[]>([]);
  const [sending, setSending] = useState(false);
  const problems = useStudio((s) => s.answerProblems);
  const id = useId();

  const send = async () => {
    const { answer, problems: found } = answerFrom(fields, typed);
    setLocal(found);
    if (found.length) return;
    setSending(true);
    try {
      await useStudio.getState().answerWait(answer);
    } finally {
      setSending(false);
    }
  };
  const shown = [...local, ...(problems ?? [])];
  const late = waiting.timeout !== null && waiting.asked_at !== null && Date.now() / 1000 > waiting.asked_at + waiting.timeout;
  return (
    <form className="wait-form" aria-label={`Answer ${waiting.block}`} onSubmit={(e) => { e.preventDefault(); void send(); }}>
      <div className="note" data-testid="wait-prompt"><strong>{waiting.block}</strong> asks: {waiting.prompt}</div>
      {late && <div className="note note--warning">Past its timeout ({waiting.timeout} s): an answer now fails the Wait with wait_timeout.</div>}
      {fields.length === 0 ? (
        <div className="field">
          <label className="field__label" htmlFor={`${id}-answer`}>Answer (JSON)</label>
          <textarea id={`${id}-answer`} data-testid="wait-answer" rows={3} value={String(typed[''] ?? '')}
            onChange={(e) => setTyped({ '': e.target.value })} />
        </div>
      ) : fields.map((f) => {
        const fieldId = `${id}-${f.name}`;
        const label = <label className="field__label" htmlFor={fieldId}>{f.title}{f.required ? ' *' : ''}</label>;
        const value = typed[f.name];
        const change = (v: string | boolean) => setTyped((t) => ({ ...t, [f.name]: v }));
        return (
          <div className="field" key={f.name}>
            {f.kind === 'boolean' ? (
              <label className="check" htmlFor={fieldId}>
                <input id={fieldId} type="checkbox" data-testid={`wait-field-${f.name}`} checked={value === true}
                  onChange={(e) => change(e.target.checked)} />
                <span>{f.title}{f.required ? ' *' : ''}</span>
              </label>
            ) : f.kind === 'enum' ? (
              <>{label}
                <select id={fieldId} data-testid={`wait-field-${f.name}`} value={String(value ?? '')} onChange={(e) => change(e.target.value)}>
                  <option value="">—</option>
                  {(f.options ?? []).map((o) => <option key={String(o)} value={String(o)}>{String(o)}</option>)}
                </select>
              </>
            ) : (
              <>{label}
                <textarea id={fieldId} data-testid={`wait-field-${f.name}`} rows={f.kind === 'string' || f.kind === 'number' || f.kind === 'integer' ? 1 : 3}
                  placeholder={f.kind === 'json' || f.kind === 'mapping' || f.kind === 'any' ? 'JSON' : undefined}
                  value={String(value ?? '')} onChange={(e) => change(e.target.value)} />
              </>
            )}
            {f.description && <div className="muted small">{f.description}</div>}
          </div>
        );
      })}
      {shown.length > 0 && (
        <ul className="note note--error wait-form__problems" role="alert" aria-label="Problems with the answer">
          {shown.map((p) => <li key={p}>{p}</li>)}
        </ul>
      )}
      <div className="run-panel__actions">
        <span className="field__spacer" />
        <button type="submit" className="btn btn--primary" disabled={sending}>{sending ? 'Sending…' : 'Send answer'}</button>
      </div>
    </form>
  );
}
