/** The Evaluations tab: the open diagram's recorded eval runs (`diagrama eval` keeps each in the run store), its score
 * over time, and any two side by side: per case both scores and the delta, the cases that got worse first. */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { api } from '../../api/client';
import type { EvalListed, EvalRecord } from '../../api/types';
import { type CaseDelta, compareCases, compareScorers, deltaText, inOrder, scoreText, sparkline, tally } from '../../model/evals';
import { startedText } from '../../model/run';
import { useStudio } from '../../store';

const SPARK_W = 300;
const SPARK_H = 36;

export function EvalsPanel() {
  const path = useStudio((s) => s.path);
  if (!path) return <div className="empty-state"><strong>No diagram open.</strong></div>;
  return <DiagramEvals key={path} path={path} />; // another diagram: its own state, nothing picked
}

function DiagramEvals({ path }: { path: string }) {
  const [evals, setEvals] = useState<EvalListed[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [picked, setPicked] = useState<string[]>([]);
  const [records, setRecords] = useState<Record<string, EvalRecord>>({});
  const asked = useRef(new Set<string>());

  const load = useCallback(async (from: string) => {
    setError(null);
    try {
      const found = await api.evals(from);
      if (useStudio.getState().path === from) setEvals(found);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  }, []);

  useEffect(() => {
    void load(path);
  }, [path, load]);

  // The reports of the two picked runs, each fetched once.
  useEffect(() => {
    for (const id of picked) {
      if (asked.current.has(id)) continue;
      asked.current.add(id);
      api.evalRecord(path, id).then(
        (record) => { if (useStudio.getState().path === path) setRecords((r) => ({ ...r, [id]: record })); },
        (e: unknown) => setError(e instanceof Error ? e.message : String(e)),
      );
    }
  }, [path, picked]);

  const toggle = (id: string) => setPicked((p) => (p.includes(id) ? p.filter((x) => x !== id) : [...p, id].slice(-2)));

  if (error) return <div className="note note--error" role="alert">Cannot read the eval runs: {error}</div>;
  if (evals === null) return <div className="empty-state muted small">Reading the eval runs…</div>;
  if (evals.length === 0) {
    return (
      <div className="empty-state">
        <strong>No eval runs of this diagram yet.</strong>
        <div className="muted small"><code>diagrama eval FILE.eval.yaml</code> records each in the run store; they show here.</div>
      </div>
    );
  }
  const shown = picked.map((id) => records[id]).filter((r): r is EvalRecord => !!r);
  return (
    <div className="evals-panel">
      <section className="section">
        <div className="run-status">
          <h3>Score history <span className="muted">{evals.length} eval run{evals.length === 1 ? '' : 's'}</span></h3>
          <span className="field__spacer" />
          <button type="button" className="btn-link" onClick={() => void load(path)}>refresh</button>
        </div>
        <Sparkline evals={evals} />
      </section>
      <section className="section">
        <h3>Eval runs <span className="muted">pick two to compare</span></h3>
        <div className="grid-wrap">
          <table className="grid evals-table" aria-label="Eval runs">
            <thead>
              <tr><th scope="col"><span className="sr-only">Compare</span></th><th scope="col">When</th><th scope="col">Eval file</th>
                <th scope="col">Version</th><th scope="col">Score</th><th scope="col">Passed</th></tr>
            </thead>
            <tbody>
              {evals.map((e) => (
                <tr key={e.eval_id} className={picked.includes(e.eval_id) ? 'is-picked' : ''} data-eval={e.eval_id}>
                  <td><input type="checkbox" checked={picked.includes(e.eval_id)} onChange={() => toggle(e.eval_id)}
                    aria-label={`Compare the eval run of ${startedText(e.created)} (${e.eval_id})`} /></td>
                  <td className="small" title={startedText(e.created)}>{whenText(e.created)}</td>
                  <td className="small">{e.eval_file}</td>
                  <td className="small mono" title={e.content_hash}>{e.revision ?? e.content_hash.slice(0, 8)}</td>
                  <td className="num">{scoreText(e.score)}</td>
                  <td className="small">{e.passed ?? '–'}/{e.cases ?? '–'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      {picked.length === 2 && (shown.length === 2 ? <Comparison a={shown[0]} b={shown[1]} /> : (
        <section className="section muted small">Reading the two reports…</section>
      ))}
    </div>
  );
}

/** The score of each run over time, oldest on the left (0 at the bottom, 1 at the top). */
function Sparkline({ evals }: { evals: EvalListed[] }) {
  const points = sparkline(evals, SPARK_W, SPARK_H);
  if (points.length === 0) return <div className="muted small">No run has a score.</div>;
  return (
    <svg className="sparkline" viewBox={`-4 -4 ${SPARK_W + 8} ${SPARK_H + 8}`} role="img"
      aria-label={`Score over time, from ${scoreText(evals.at(-1)?.score)} to ${scoreText(evals[0].score)}`}>
      <line x1={0} x2={SPARK_W} y1={SPARK_H} y2={SPARK_H} className="sparkline__axis" />
      <polyline points={points.map(([x, y]) => `${x},${y}`).join(' ')} className="sparkline__line" />
      {points.map(([x, y], i) => <circle key={i} cx={x} cy={y} r={2.5} className="sparkline__dot" />)}
    </svg>
  );
}

/** Two eval runs side by side: the older is the base; per case both scores and the delta, worse first. */
function Comparison({ a, b }: { a: EvalRecord; b: EvalRecord }) {
  const [before, after] = inOrder(a, b);
  const rows = useMemo(() => compareCases(before.report, after.report), [before, after]);
  const scorers = useMemo(() => compareScorers(before.report, after.report), [before, after]);
  const counts = tally(rows);
  const overall = before.score !== null && after.score !== null ? after.score - before.score : null;
  return (
    <section className="section" aria-label="Comparison">
      <h3>Side by side</h3>
      <div className="small evals-compare__head">
        <span>{startedText(before.created)} <span className="muted">{before.revision ?? before.content_hash.slice(0, 8)}</span></span>
        {' → '}
        <span>{startedText(after.created)} <span className="muted">{after.revision ?? after.content_hash.slice(0, 8)}</span></span>
      </div>
      <div className="small" data-testid="evals-overall">
        score {scoreText(before.score)} → {scoreText(after.score)}{' '}
        <strong className={deltaClass(overall)}>{deltaText(overall)}</strong>
        {' · '}{counts.worse} worse, {counts.better} better, {counts.same} same
      </div>
      {scorers.length > 0 && <DeltaTable label="Scorer deltas" first="Scorer" rows={scorers} />}
      <DeltaTable label="Case deltas" first="Case" rows={rows} />
    </section>
  );
}

/** Rows of two scores and their change, a worse one tinted red and a better one green. */
function DeltaTable({ label, first, rows }: { label: string; first: string; rows: CaseDelta[] }) {
  return (
    <table className="grid evals-table" aria-label={label}>
      <thead><tr><th scope="col">{first}</th><th scope="col">Before</th><th scope="col">After</th><th scope="col">Δ</th></tr></thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.id} className={deltaClass(r.delta)}>
            <td className="small">{r.id}</td>
            <td className="num">{scoreText(r.before)}</td>
            <td className="num">{scoreText(r.after)}</td>
            <td className="num"><strong>{deltaText(r.delta)}</strong></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** When an eval ran, short: its day and minute (the full time is the cell's title). */
function whenText(created: number): string {
  return new Date(created * 1000).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

function deltaClass(delta: number | null): string {
  if (delta === null || Math.abs(delta) < 5e-4) return '';
  return delta < 0 ? 'is-worse' : 'is-better';
}
