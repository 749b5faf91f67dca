/** The past runs, searchable (issue 43): filters by status, date, block reached, error type and text in the inputs
 * (the server filters: a long list is never all sent), and any two runs side by side: where their paths part and
 * which variables differ. */
import { useMemo } from 'react';
import { startedText } from '../../model/run';
import { compareRuns, filtering, type RunComparison } from '../../model/runSearch';
import { useStudio } from '../../store';
import { ValueView } from './Records';

const STATUSES = ['succeeded', 'failed', 'waiting', 'interrupted', 'running', 'cancelled'];

export function RunsBrowser() {
  const runs = useStudio((s) => s.runs);
  const run = useStudio((s) => s.run);
  const filter = useStudio((s) => s.runFilter);
  const compareIds = useStudio((s) => s.compareIds);
  const compared = useStudio((s) => s.compared);
  const blocks = useStudio((s) => s.diagram?.blocks);
  const { openRun, setRunFilter, toggleCompare } = useStudio.getState();
  const comparison = useMemo(() => (compared ? compareRuns(compared[0], compared[1]) : null), [compared]);
  return (
    <section className="section runs-browser">
      <h3>Past runs</h3>
      <form className="runs-filter" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        <label className="runs-filter__field"><span className="small">Status</span>
          <select aria-label="Status" value={filter.status} onChange={(e) => setRunFilter({ status: e.target.value })}>
            <option value="">any</option>
            {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select></label>
        <label className="runs-filter__field"><span className="small">From</span>
          <input type="date" aria-label="From" value={filter.since} onChange={(e) => setRunFilter({ since: e.target.value })} /></label>
        <label className="runs-filter__field"><span className="small">To</span>
          <input type="date" aria-label="To" value={filter.until} onChange={(e) => setRunFilter({ until: e.target.value })} /></label>
        <label className="runs-filter__field"><span className="small">Reached block</span>
          <input list="runs-filter-blocks" aria-label="Reached block" value={filter.block} onChange={(e) => setRunFilter({ block: e.target.value })} /></label>
        <datalist id="runs-filter-blocks">{(blocks ?? []).slice(0, 500).map((b) => <option key={b.id} value={b.id} />)}</datalist>
        <label className="runs-filter__field"><span className="small">Error type</span>
          <input aria-label="Error type" placeholder="timeout" value={filter.error} onChange={(e) => setRunFilter({ error: e.target.value })} /></label>
        <label className="runs-filter__field"><span className="small">Text in inputs</span>
          <input type="search" aria-label="Text in inputs" value={filter.text} onChange={(e) => setRunFilter({ text: e.target.value })} /></label>
      </form>
      {runs.length === 0 ? <div className="muted small">{filtering(filter) ? 'No run matches.' : 'No runs yet.'}</div> : (
        <ul className="runs-list" aria-label="Past runs">
          {runs.map((r) => (
            <li key={r.run_id} className="runs-list__row">
              <input type="checkbox" aria-label={`Compare ${r.run_id}`} title="compare (pick two)" checked={compareIds.includes(r.run_id)}
                onChange={() => void toggleCompare(r.run_id)} />
              <button type="button" className={`run-item${run?.runId === r.run_id ? ' is-current' : ''}`} onClick={() => void openRun(r.run_id)}>
                <span className={`status-dot status-dot--${r.status}`} aria-hidden="true" />
                <span className="run-item__when">{startedText(r.started)}</span>
                <span className="muted small">{r.status} · {r.steps} steps{r.duration_ms !== null ? ` · ${r.duration_ms} ms` : ''}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      {compareIds.length === 1 && <div className="muted small">Pick a second run to compare.</div>}
      {comparison && compared && <Comparison comparison={comparison} ids={[compared[0].run_id, compared[1].run_id]} />}
    </section>
  );
}

function Comparison({ comparison, ids }: { comparison: RunComparison; ids: [string, string] }) {
  return (
    <div className="run-compare" data-testid="run-compare">
      <h4>Path {comparison.parted < 0 ? <span className="muted small">the same</span> : <span className="small">parts at step {comparison.parted + 1}</span>}</h4>
      <table className="grid run-compare__path" aria-label="Paths compared">
        <thead><tr><th scope="col">#</th><th scope="col">{ids[0]}</th><th scope="col">{ids[1]}</th></tr></thead>
        <tbody>
          {comparison.path.map((r, i) => (
            <tr key={i} className={r.same ? undefined : 'is-different'}><td className="muted">{i + 1}</td><td>{r.left || '—'}</td><td>{r.right || '—'}</td></tr>
          ))}
        </tbody>
      </table>
      <h4>Variables</h4>
      {!comparison.variablesKnown && <div className="muted small">The variables of a run this studio did not start are not kept.</div>}
      {comparison.variables.length > 0 && (
        <table className="grid run-compare__vars" aria-label="Variables compared">
          <thead><tr><th scope="col">name</th><th scope="col">{ids[0]}</th><th scope="col">{ids[1]}</th></tr></thead>
          <tbody>
            {comparison.variables.map((v) => (
              <tr key={v.name} className={v.same ? undefined : 'is-different'}>
                <th scope="row"><code>{v.name}</code></th>
                <td><ValueView value={v.left ?? null} label={`${v.name} in ${ids[0]}`} max={300} /></td>
                <td><ValueView value={v.right ?? null} label={`${v.name} in ${ids[1]}`} max={300} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
