/** What a run did in one block: each step's status, duration, tokens per kind and cost, HTTP calls, passages retrieved,
 * tool calls, inputs, outputs, error; over the steps, the block's cost summed (a block a loop ran several times). */
import type { Step } from '../../api/types';
import { badgeTitle, stepCostText, stepUsage, sumCosts, sumText, usageText } from '../../model/cost';
import { linkText, msText, tokensText } from '../../model/run';
import { PinThisOutput } from '../pins/Pins';
import { Passages } from './Passages';
import { FieldsView } from './Records';

export { tokensText };

function Json({ value }: { value: unknown }) {
  // scrolled when long: focusable, so that the keyboard scrolls it too
  return <pre className="json" tabIndex={0}>{typeof value === 'string' ? value : JSON.stringify(value, null, 2)}</pre>;
}

const empty = (v: unknown) => v === null || v === undefined || (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && v !== null && Object.keys(v).length === 0);

export function StepDetails({ steps, passes }: { steps: Step[]; passes?: number }) {
  if (!steps.length) return <div className="muted small">This block did not run.</div>;
  const total = sumCosts(steps);
  return (
    <div className="steps-detail">
      {passes !== undefined && <div className="small">Loop passes: <strong>{passes}</strong></div>}
      {total.requests > 1 && (
        <div className="small step-cost-sum" data-testid="block-cost" title={badgeTitle(total)}>
          Cost of its {total.requests} requests: <strong>{sumText(total)}</strong> · tokens {usageText(total.usage)}
        </div>
      )}
      {steps.map((s, i) => {
        const link = linkText(s);
        const calls = s.called_tools;
        const usage = usageText(stepUsage(s));
        const cost = stepCostText(s);
        return (
          <details key={i} className={`step step--${s.status}`} open={i === steps.length - 1}>
            <summary>
              <span className={`status-dot status-dot--${s.status}`} aria-hidden="true" />
              <span>{steps.length > 1 ? `Step ${i + 1}` : 'Step'} — {s.status}</span>
              <span className="field__spacer" />
              {s.duration_ms !== null && <span className="muted small">{msText(s.duration_ms)} ms</span>}
            </summary>
            <dl className="step__facts">
              {typeof s.model === 'string' && s.model && <><dt>Model</dt><dd><code>{s.model}</code></dd></>}
              {usage && <><dt>Tokens</dt><dd>{usage}</dd></>}
              {s.http_calls.length > 0 && <><dt>HTTP</dt><dd><code>{s.http_calls.join('; ')}</code></dd></>}
              {link && <><dt>Link taken</dt><dd><code>{link}</code></dd></>}
              {cost && <><dt>Cost</dt><dd className={cost === 'cost unknown' ? 'cost cost--unknown' : 'cost'}>{cost}</dd></>}
            </dl>
            {!empty(s.error) && <div className="step__error" role="alert"><Json value={s.error} /></div>}
            {s.passages.length > 0 && (
              <><h4>Passages <span className="muted small">{s.passages[0].knowledge} · “{s.passages[0].query}”</span></h4>
                <Passages passages={s.passages} label="Passages retrieved" /></>
            )}
            {calls.length > 0 && <><h4>Tool calls</h4><Json value={calls} /></>}
            {!empty(s.inputs) && <><h4>Inputs</h4><FieldsView value={s.inputs} label="Inputs" /></>}
            {!empty(s.outputs) && <><h4>Outputs</h4><FieldsView value={s.outputs} label="Outputs" /></>}
            <PinThisOutput step={s} />
          </details>
        );
      })}
    </div>
  );
}
