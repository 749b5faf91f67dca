/** Run the diagram: inputs from Start, offline switch, live status, steps, runs waiting for an answer (a Wait's form),
 * past runs, scenarios. */
import { useMemo } from 'react';
import type { Block, BlockType, RunData } from '../../api/types';
import { formatScalar, parseScalar } from '../../model/scalars';
import { isDirty, useStudio } from '../../store';
import { msText } from '../../model/run';
import { type CostSum, stepCostText, stepUsage, sumCosts, sumText, usageText } from '../../model/cost';
import { useKeptState } from '../keptState';
import { WaitForm } from './WaitForm';
import { ValueView } from './Records';
import { RunsBrowser } from './RunsBrowser';

/** The diagram's start block (its type says it is one), whose inputs the run form offers. */
function startBlock(blocks: Block[], palette: BlockType[]): Block | undefined {
  const starts = new Set(palette.filter((t) => t.is_start).map((t) => t.type));
  return blocks.find((b) => starts.has(b.type));
}

export function RunPanel() {
  const diagram = useStudio((s) => s.diagram);
  const saved = useStudio((s) => s.saved);
  const session = useStudio((s) => s.session);
  const palette = useStudio((s) => s.palette);
  const run = useStudio((s) => s.run);
  const runs = useStudio((s) => s.runs);
  const path = useStudio((s) => s.path);
  const scenarioResults = useStudio((s) => s.scenarioResults);
  const scenariosRunning = useStudio((s) => s.scenariosRunning);
  const dirty = useStudio(isDirty);
  const { startRun, openRun, closeRun, runScenarios, setDialog, saveScenario } = useStudio.getState();

  // the run uses the file on disk: take the inputs from the saved diagram
  const defaults = useMemo(() => {
    const start = startBlock((saved ?? diagram)?.blocks ?? [], palette);
    const inputs = start?.inputs;
    return inputs && typeof inputs === 'object' ? (inputs as Record<string, unknown>) : {};
  }, [saved, diagram, palette]);
  // What was typed is kept per file while another tab shows, or the diagram is edited (the run takes the saved
  // file); a change of the saved Start's inputs (part of the key) fills the form with them anew.
  const from = useMemo(() => JSON.stringify(defaults), [defaults]);
  const [values, setValues] = useKeptState(`run-inputs:${path}:${from}`, () => asTexts(defaults));
  const setValue = (k: string, text: string) => setValues((v) => ({ ...v, [k]: text }));
  const allowOnline = !!session?.allow_online;
  const offline = useStudio((s) => s.offline);
  const setOffline = useStudio.getState().setOffline;
  const waitingRuns = runs.filter((r) => r.status === 'waiting' && r.waiting);
  const running = run?.data?.status === 'running' || (run !== null && run.data === null);

  const submit = () => {
    const inputs = Object.fromEntries(Object.entries(values).map(([k, t]) => [k, typeof defaults[k] === 'string' ? t : parseScalar(t)]));
    void startRun(inputs, allowOnline ? offline : true);
  };

  const data = run?.data;
  const cost = useMemo(() => sumCosts(data?.steps ?? []), [data?.steps]);
  return (
    <div className="run-panel">
      {run && (
        <section className="section" aria-live="polite">
          <div className="run-status">
            <span className={`status-dot status-dot--${data?.status ?? 'running'}`} aria-hidden="true" />
            <strong>{data ? data.status : 'starting'}</strong>
            <span className="muted small">run {run.runId}{data ? ` · ${data.steps.length} steps · ${data.count} events` : ''}
              {data?.replay_of ? ` · replay of ${data.replay_of}` : ''}</span>
            <span className="field__spacer" />
            <button type="button" className="btn-link" onClick={closeRun}>clear</button>
          </div>
          {data && cost.requests > 0 && <RunCost cost={cost} running={data.status === 'running'} />}
          {data && data.status === 'waiting' && data.waiting && <WaitForm key={waitingAt(run.runId, data)} keptAs={waitingAt(run.runId, data)} waiting={data.waiting} />}
          {data && data.status === 'interrupted' && data.checkpointed && (
            <div className="note note--warning">
              Its process is gone. Resuming continues from its last checkpoint: the block that was in flight runs again.{' '}
              <button type="button" className="btn" onClick={() => void useStudio.getState().answerWait()}>Resume</button>
            </div>
          )}
          {data && data.status !== 'running' && <RunResult data={data} />}
          {data && data.steps.length > 0 && (
            <table className="grid steps-table" aria-label="Steps">
              <thead><tr><th scope="col">#</th><th scope="col">Block</th><th scope="col">Status</th><th scope="col">ms</th><th scope="col">Tokens</th><th scope="col">Cost</th></tr></thead>
              <tbody>
                {data.steps.map((s, i) => (
                  <tr key={i} className={`step-row step-row--${s.status}`}>
                    <td>{i + 1}</td>
                    <td>
                      <button type="button" className="btn-link" onClick={() => useStudio.getState().focusBlock(s.block)}>
                        {s.block}
                      </button>
                      <span className="muted small"> {s.block_type}</span>
                    </td>
                    <td>{s.status}</td>
                    <td>{msText(s.duration_ms)}</td>
                    <td className="small">{usageText(stepUsage(s))}</td>
                    <td className="small step-row__cost">{stepCostText(s)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {data && data.status !== 'running' && (
            <button type="button" className="btn" disabled={!!session?.read_only} onClick={() => setDialog({
              title: 'Save this run as a scenario',
              message: 'The scenario replays these inputs and checks the path and results.',
              input: { label: 'Scenario file', value: `tests/${(path ?? 'diagram').replace(/\.ya?ml$/, '').split('/').pop()}.scenario.yaml` },
              confirm: 'Save scenario',
              onConfirm: (v) => saveScenario(v),
            })}>Save as scenario</button>
          )}
        </section>
      )}

      <section className="section">
        <h3>Run {path}</h3>
        {dirty && <div className="note note--warning">Runs use the saved file: your unsaved edits are not part of it.</div>}
        <form onSubmit={(e) => { e.preventDefault(); submit(); }}>
          {Object.keys(defaults).length === 0 && <div className="muted small">The Start block declares no inputs.</div>}
          {Object.keys(defaults).map((k) => (
            <div className="field" key={k}>
              <label className="field__label" htmlFor={`run-input-${k}`}>{k}</label>
              <textarea id={`run-input-${k}`} data-testid={`run-input-${k}`} rows={Math.min(4, Math.max(1, Math.ceil((values[k] ?? '').length / 40)))}
                value={values[k] ?? ''} onChange={(e) => setValue(k, e.target.value)} />
            </div>
          ))}
          <div className="run-panel__actions">
            <label className="check" title={allowOnline ? 'providers answer from recorded/fake replies' : 'this server only allows offline runs'}>
              <input type="checkbox" checked={allowOnline ? offline : true} disabled={!allowOnline} onChange={(e) => setOffline(e.target.checked)} />
              <span>Offline</span>
            </label>
            <span className="field__spacer" />
            <button type="submit" className="btn btn--primary" disabled={!path || running}>{running ? 'Running…' : 'Run'}</button>
          </div>
        </form>
      </section>

      {waitingRuns.length > 0 && (
        <section className="section">
          <h3>Waiting for an answer</h3>
          <ul className="runs-list" aria-label="Waiting runs">
            {waitingRuns.map((r) => (
              <li key={r.run_id}>
                <button type="button" className={`run-item${run?.runId === r.run_id ? ' is-current' : ''}`} onClick={() => void openRun(r.run_id)}>
                  <span className="status-dot status-dot--waiting" aria-hidden="true" />
                  <span className="run-item__when">{r.waiting!.block}</span>
                  <span className="muted small">{r.waiting!.prompt.length > 120 ? `${r.waiting!.prompt.slice(0, 119)}…` : r.waiting!.prompt}</span>
                </button>
              </li>
            ))}
          </ul>
        </section>
      )}

      <RunsBrowser />

      <section className="section">
        <div className="run-status">
          <h3>Scenarios</h3>
          <span className="field__spacer" />
          <button type="button" className="btn" disabled={scenariosRunning} onClick={() => void runScenarios('.')}>
            {scenariosRunning ? 'Running scenarios…' : 'Run scenarios'}
          </button>
        </div>
        {scenarioResults && (
          scenarioResults.length === 0 ? <div className="muted small">No scenarios found.</div> : (
            <>
              <div className="small">
                <strong className="pass">{scenarioResults.filter((r) => r.passed).length} passed</strong>, {' '}
                <strong className="fail">{scenarioResults.filter((r) => !r.passed).length} failed</strong>
              </div>
              <ul className="scenarios" aria-label="Scenario results">
                {scenarioResults.map((r) => (
                  <li key={`${r.file}:${r.name}`} className={r.passed ? 'is-pass' : 'is-fail'}>
                    <span className={`sev ${r.passed ? 'sev--pass' : 'sev--error'}`}>{r.passed ? 'pass' : 'fail'}</span>
                    <span>{r.name} <span className="muted small">{r.file}</span></span>
                    {r.failures.length > 0 && <ul className="scenario-failures">{r.failures.map((f, i) => <li key={i}>{f}</li>)}</ul>}
                  </li>
                ))}
              </ul>
            </>
          )
        )}
      </section>
    </div>
  );
}

/** The run's cost so far: its total (a lower bound, saying how many steps are unpriced, when some prices are unknown),
 * its requests and its tokens per kind. */
function RunCost({ cost, running }: { cost: CostSum; running: boolean }) {
  const unknown = cost.unknown > 0;
  return (
    <div className={`run-cost${unknown ? ' run-cost--unknown' : ''}`} data-testid="run-cost">
      <span className="run-cost__label">{running ? 'Cost so far' : 'Cost'}</span>{' '}
      <strong className="run-cost__total" data-testid="run-cost-total">{sumText(cost)}</strong>
      <span className="muted small"> · {cost.requests} request{cost.requests === 1 ? '' : 's'}
        {cost.cached ? ` (${cost.cached} cached)` : ''} · tokens {usageText(cost.usage)}</span>
    </div>
  );
}

/** What the run ended with: its errors (a click selects the block) and its final variables. */
function RunResult({ data }: { data: RunData }) {
  const variables = data.variables;
  return (
    <div className="run-result" data-testid="run-result">
      {data.errors.map((e, i) => (
        <button key={i} type="button" className={`note note--error run-result__error${e.ignored || e.handled_by ? ' is-handled' : ''}`}
          role="alert" disabled={!e.block} onClick={() => e.block && useStudio.getState().focusBlock(e.block, errorField(e.type))}
          title={e.block ? `select ${e.block}` : undefined}>
          <strong>{e.type}</strong>{e.block ? ` in ${e.block}` : ''}{e.handled_by ? ` (handled by ${e.handled_by})` : e.ignored ? ' (ignored)' : ''}: {e.message}
        </button>
      ))}
      {variables && Object.keys(variables).length > 0 && (
        <table className="grid run-result__vars" aria-label="Final variables">
          <caption className="muted small">Variables at the end</caption>
          <tbody>
            {Object.entries(variables).sort(([a], [b]) => Number(b === 'answer') - Number(a === 'answer')).map(([k, v]) => (
              <tr key={k}><th scope="row"><code>{k}</code></th><td><ValueView value={v} label={`Variable ${k}`} /></td></tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** The input an error type is about, when its name says (`invalid_input` is the block's inputs). */
function errorField(type: string): string | null {
  return type === 'invalid_input' ? 'with' : null;
}

/** A run's request for an answer: the run and how far its events had got when it asked (a new request, a new form). */
function waitingAt(runId: string, data: RunData): string {
  return `${runId}:${data.count}`;
}

function asTexts(inputs: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, formatScalar(v)]));
}
