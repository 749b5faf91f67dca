/** What a run did in one block: each step's status, duration, tokens, tool calls, inputs, outputs, error. */
import type { RunStep } from '../../api/types';

function Json({ value }: { value: unknown }) {
  return <pre className="json">{typeof value === 'string' ? value : JSON.stringify(value, null, 2)}</pre>;
}

const empty = (v: unknown) => v === null || v === undefined || (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && v !== null && Object.keys(v).length === 0);

export function tokensText(tokens: unknown): string {
  if (tokens === null || tokens === undefined) return '';
  if (typeof tokens === 'number') return `${tokens} tokens`;
  if (typeof tokens === 'object') {
    return Object.entries(tokens as Record<string, unknown>).map(([k, v]) => `${k.replace(/_tokens$/, '')} ${String(v)}`).join(' · ');
  }
  return String(tokens);
}

export function StepDetails({ steps, passes }: { steps: RunStep[]; passes?: number }) {
  if (!steps.length) return <div className="muted small">This block did not run.</div>;
  return (
    <div className="steps-detail">
      {passes !== undefined && <div className="small">Loop passes: <strong>{passes}</strong></div>}
      {steps.map((s, i) => (
        <details key={i} className={`step step--${s.status}`} open={i === steps.length - 1}>
          <summary>
            <span className={`status-dot status-dot--${s.status}`} aria-hidden="true" />
            <span>{steps.length > 1 ? `Step ${i + 1}` : 'Step'} — {s.status}</span>
            <span className="field__spacer" />
            {s.duration_ms !== null && <span className="muted small">{s.duration_ms} ms</span>}
          </summary>
          <dl className="step__facts">
            {!empty(s.tokens) && <><dt>Tokens</dt><dd>{tokensText(s.tokens)}</dd></>}
            {!empty(s.link) && <><dt>Link taken</dt><dd><code>{typeof s.link === 'string' ? s.link : JSON.stringify(s.link)}</code></dd></>}
          </dl>
          {!empty(s.error) && <div className="step__error" role="alert"><Json value={s.error} /></div>}
          {!empty(s.tool_calls) && <><h4>Tool calls</h4><Json value={s.tool_calls} /></>}
          {!empty(s.inputs) && <><h4>Inputs</h4><Json value={s.inputs} /></>}
          {!empty(s.outputs) && <><h4>Outputs</h4><Json value={s.outputs} /></>}
        </details>
      ))}
    </div>
  );
}
