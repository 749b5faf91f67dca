/** A value of a run shown as data: a list of records (a history, a Loop's collected results, passages) as a table
 * with a column per key, switchable to its JSON; any other value as JSON. */
import { useState } from 'react';
import { asRecords, cellText } from '../../model/records';

export function ValueView({ value, label, max = 600 }: { value: unknown; label: string; max?: number }) {
  const table = asRecords(value);
  const [json, setJson] = useState(false);
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 1);
  const cut = text.length > max ? `${text.slice(0, max - 1)}…` : text;
  if (!table) return <pre className="run-result__value">{cut}</pre>;
  return (
    <div className="records">
      <div className="records__head">
        <span className="muted small">{table.rows.length} row{table.rows.length === 1 ? '' : 's'}</span>
        <button type="button" className="btn-link small" aria-pressed={json} onClick={() => setJson(!json)}
          aria-label={json ? `${label}: show as a table` : `${label}: show as JSON`}>{json ? 'Table' : 'JSON'}</button>
      </div>
      {json ? <pre className="run-result__value">{JSON.stringify(value, null, 1)}</pre> : (
        <div className="records__scroll">
          <table className="grid records__table" aria-label={label}>
            <thead><tr><th scope="col">#</th>{table.columns.map((c) => <th key={c} scope="col">{c}</th>)}</tr></thead>
            <tbody>
              {table.rows.slice(0, 200).map((row, i) => (
                <tr key={i}><td className="muted">{i + 1}</td>{table.columns.map((c) => <td key={c}>{cellText(row[c])}</td>)}</tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

/** A step's inputs or outputs: each list of records a table, the rest JSON. */
export function FieldsView({ value, label }: { value: Record<string, unknown>; label: string }) {
  const tables = Object.entries(value).filter(([, v]) => asRecords(v));
  if (!tables.length) return <pre className="json" tabIndex={0}>{JSON.stringify(value, null, 2)}</pre>;
  const rest = Object.fromEntries(Object.entries(value).filter(([, v]) => !asRecords(v)));
  return (
    <>
      {Object.keys(rest).length > 0 && <pre className="json" tabIndex={0}>{JSON.stringify(rest, null, 2)}</pre>}
      {tables.map(([k, v]) => (
        <div key={k}><code className="small">{k}</code><ValueView value={v} label={`${label} ${k}`} /></div>
      ))}
    </>
  );
}
