/** A data table input (history, tools): a grid, a template expression, or a CSV file. */
import { useEffect, useRef, useState } from 'react';
import { api } from '../../api/client';
import type { CsvPreview, Registry } from '../../api/types';
import {
  addRow, checkParametersCell, columnsFor, formatJsonCell, HISTORY_ROLES, moveRow, removeRow, setCell, tableFromValue,
  valueFromTable, type TableColumn, type TableMode, type TableValue,
} from '../../model/tables';
import { plural } from '../../model/plural';
import { TemplateInput } from './TemplateInput';

export interface TableFieldProps {
  label: string;
  kind: string;
  value: unknown;
  onChange: (value: unknown) => void;
  names: string[];
  testId: string;
  registries: Registry[];
  diagramPath?: string;
}

const MODES: Array<[TableMode, string]> = [['table', 'Table'], ['expression', 'Expression'], ['csv', 'CSV file']];

export function TableField({ label, kind, value, onChange, names, testId, registries, diagramPath }: TableFieldProps) {
  const table = tableFromValue(value);
  const memory = useRef<Partial<Record<TableMode, unknown>>>({});
  const write = (t: TableValue) => onChange(valueFromTable(t, kind));

  const switchMode = (mode: TableMode) => {
    if (mode === table.mode) return;
    memory.current[table.mode] = value;
    const remembered = memory.current[mode];
    if (remembered !== undefined) { onChange(remembered); return; }
    // `{{ tools }}` would be the function itself: a run refuses it (`not function`); a call gives the table
    if (mode === 'expression') onChange(kind === 'tools' ? `{{ tools(${registries[0] ? `'${registries[0].group}'` : ''}) }}` : `{{ ${kind || 'table'} }}`);
    else if (mode === 'csv') onChange({ csv: '' });
    else onChange([]);
  };

  const toolsExtras = kind === 'tools' ? registries.map((r) => `tools('${r.group}')`) : [];
  return (
    <div className="table-field" data-testid={testId}>
      <div className="segmented" role="radiogroup" aria-label={`${label} source`}>
        {MODES.map(([m, text]) => (
          <button key={m} type="button" role="radio" aria-checked={table.mode === m} className={table.mode === m ? 'is-on' : ''}
            onClick={() => switchMode(m)}>{text}</button>
        ))}
      </div>
      {table.mode === 'table' && <Grid label={label} kind={kind} table={table} onChange={write} />}
      {table.mode === 'expression' && (
        <>
          <TemplateInput ariaLabel={`${label} expression`} value={table.expression} names={names} extra={toolsExtras}
            testId={`${testId}-expression`} onChange={(t) => write({ ...table, expression: t })} />
          {kind === 'tools' && registries.length > 0 && (
            <RegistryPicker registries={registries} expression={table.expression} onPick={(g) => write({ ...table, expression: `{{ tools('${g}') }}` })} />
          )}
        </>
      )}
      {table.mode === 'csv' && (
        <CsvMode label={label} path={table.csv} diagramPath={diagramPath} testId={testId}
          onChange={(p) => write({ ...table, csv: p })} />
      )}
    </div>
  );
}

function RegistryPicker({ registries, expression, onPick }: { registries: Registry[]; expression: string; onPick: (g: string) => void }) {
  const current = /tools\(\s*['"]([^'"]+)['"]/.exec(expression)?.[1];
  const reg = registries.find((r) => r.group === current);
  return (
    <div className="registry">
      <label className="registry__pick">
        <span>Tools from registry group</span>
        <select value={current ?? ''} onChange={(e) => e.target.value && onPick(e.target.value)}>
          <option value="">(choose a group)</option>
          {registries.map((r) => <option key={r.group} value={r.group}>{r.group} — {r.description || plural(r.tools.length, 'tool')}</option>)}
        </select>
      </label>
      {reg?.description && <div className="muted small">{reg.description}</div>}
      {reg && (
        <ul className="registry__tools" aria-label={`tools in ${reg.group}`}>
          {reg.tools.map((t) => <li key={t.name}><code>{t.name}</code> <span>{t.description}</span></li>)}
        </ul>
      )}
    </div>
  );
}

function Grid({ label, kind, table, onChange }: { label: string; kind: string; table: TableValue; onChange: (t: TableValue) => void }) {
  const columns = columnsFor(kind, table.rows);
  const rows = table.rows;
  const set = (next: typeof rows) => onChange({ ...table, rows: next });
  return (
    <div className="grid-wrap">
      {rows.length === 0 ? <div className="muted small">No rows.</div> : (
        <table className="grid grid--table">
          <thead>
            <tr>
              <th scope="col" className="grid__num">#</th>
              {columns.map((c) => <th key={c.key} scope="col">{c.title}</th>)}
              <th scope="col"><span className="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              <tr key={i}>
                <td className="grid__num">{i + 1}</td>
                {columns.map((c) => (
                  <td key={c.key}>
                    <Cell column={c} value={r[c.key]} label={`${label} row ${i + 1} ${c.title}`}
                      onChange={(v) => set(setCell(rows, i, c.key, v))} />
                  </td>
                ))}
                <td className="grid__actions">
                  <button type="button" className="icon-btn" aria-label={`Move ${label} row ${i + 1} up`} disabled={i === 0} onClick={() => set(moveRow(rows, i, -1))}>↑</button>
                  <button type="button" className="icon-btn" aria-label={`Move ${label} row ${i + 1} down`} disabled={i === rows.length - 1} onClick={() => set(moveRow(rows, i, 1))}>↓</button>
                  <button type="button" className="icon-btn" aria-label={`Remove ${label} row ${i + 1}`} onClick={() => set(removeRow(rows, i))}>×</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <button type="button" className="btn btn--small" onClick={() => set(addRow(rows, kind))}>+ Add row</button>
    </div>
  );
}

function Cell({ column, value, label, onChange }: { column: TableColumn; value: unknown; label: string; onChange: (v: unknown) => void }) {
  if (column.kind === 'role') {
    return (
      <select aria-label={label} value={typeof value === 'string' ? value : ''} onChange={(e) => onChange(e.target.value)}>
        {!HISTORY_ROLES.includes(String(value ?? '')) && <option value={String(value ?? '')}>{String(value ?? '')}</option>}
        {HISTORY_ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
      </select>
    );
  }
  if (column.kind === 'json') return <JsonCell label={label} value={value} onChange={onChange} />;
  const text = value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  if (column.kind === 'longtext') {
    return <textarea aria-label={label} rows={Math.min(6, Math.max(1, Math.ceil(text.length / 28)))} value={text} onChange={(e) => onChange(e.target.value)} />;
  }
  return <input aria-label={label} value={text} onChange={(e) => onChange(e.target.value)} />;
}

function JsonCell({ label, value, onChange }: { label: string; value: unknown; onChange: (v: unknown) => void }) {
  const [draft, setDraft] = useState<string | null>(null);
  const text = draft ?? formatJsonCell(value);
  const check = checkParametersCell(text || '{}');
  return (
    <div className={`json-cell${check.ok ? '' : ' is-invalid'}`}>
      <textarea aria-label={label} aria-invalid={!check.ok || undefined} spellCheck={false} rows={Math.min(8, text.split('\n').length)}
        value={text}
        onChange={(e) => {
          setDraft(e.target.value);
          const c = checkParametersCell(e.target.value);
          if (c.ok) onChange(c.value);
        }}
        onBlur={() => { if (checkParametersCell(text).ok) setDraft(null); }} />
      {!check.ok && <div className="inline-error" role="alert">{check.error}</div>}
    </div>
  );
}

function CsvMode({ label, path, diagramPath, testId, onChange }: {
  label: string; path: string; diagramPath?: string; testId: string; onChange: (p: string) => void;
}) {
  const [preview, setPreview] = useState<CsvPreview | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setPreview(null);
    setError(null);
    if (!path || !diagramPath) return;
    let live = true;
    const t = setTimeout(() => {
      api.csv(diagramPath, path).then((p) => { if (live) setPreview(p); }, (e: Error) => { if (live) setError(e.message); });
    }, 300);
    return () => { live = false; clearTimeout(t); };
  }, [path, diagramPath]);
  return (
    <div className="csv">
      <input aria-label={`${label} CSV file`} data-testid={`${testId}-csv`} placeholder="data/file.csv (relative to the diagram)" value={path}
        spellCheck={false} onChange={(e) => onChange(e.target.value)} />
      {error && <div className="inline-error" role="alert">{error}</div>}
      {preview && (
        <div className="csv__preview">
          <div className="muted small">{preview.total} row{preview.total === 1 ? '' : 's'}{preview.total > preview.rows.length ? `, first ${preview.rows.length} shown` : ''}</div>
          <div className="csv__scroll">
            <table className="grid grid--preview" aria-label={`${label} CSV preview`}>
              <thead><tr>{preview.columns.map((c) => <th key={c} scope="col">{c}</th>)}</tr></thead>
              <tbody>
                {preview.rows.map((r, i) => <tr key={i}>{r.map((c, j) => <td key={j}>{c === null || c === undefined ? '' : String(c)}</td>)}</tr>)}
              </tbody>
            </table>
          </div>
        </div>
      )}
    </div>
  );
}
