/** Data-table fields (history, tools): the diagram value ↔ the grid the panel edits. */

export type TableMode = 'table' | 'expression' | 'csv';
export type Row = Record<string, unknown>;

export interface TableColumn {
  key: string;
  title: string;
  kind: 'text' | 'role' | 'json' | 'longtext';
  required?: boolean;
}

export const HISTORY_ROLES = ['system', 'user', 'assistant', 'tool'];

export const TABLE_COLUMNS: Record<string, TableColumn[]> = {
  history: [
    { key: 'role', title: 'Role', kind: 'role', required: true },
    { key: 'content', title: 'Content', kind: 'longtext', required: true },
    { key: 'tool_call_id', title: 'Tool call id', kind: 'text' },
    { key: 'name', title: 'Name', kind: 'text' },
  ],
  tools: [
    { key: 'name', title: 'Name', kind: 'text', required: true },
    { key: 'description', title: 'Description', kind: 'longtext', required: true },
    { key: 'parameters', title: 'Parameters (JSON Schema)', kind: 'json', required: true },
  ],
};

export function columnsFor(kind: string, rows: Row[] = []): TableColumn[] {
  const known = TABLE_COLUMNS[kind] ?? [];
  const extra = new Set<string>();
  for (const r of rows) for (const k of Object.keys(r)) if (!known.some((c) => c.key === k)) extra.add(k);
  return [...known, ...[...extra].map((key): TableColumn => ({ key, title: key, kind: 'text' }))];
}

export interface TableValue {
  mode: TableMode;
  /** table mode: the rows as mappings */
  rows: Row[];
  /** table mode: the value was written as `{columns, rows}` */
  columnar: boolean;
  /** expression mode */
  expression: string;
  /** csv mode */
  csv: string;
}

const EMPTY: TableValue = { mode: 'table', rows: [], columnar: false, expression: '', csv: '' };

/** Reads a diagram value: a list of mappings, `{columns, rows}`, `{csv: path}`, or a template string. */
export function tableFromValue(value: unknown): TableValue {
  if (value === undefined || value === null) return { ...EMPTY };
  if (typeof value === 'string') return { ...EMPTY, mode: 'expression', expression: value };
  if (Array.isArray(value)) {
    return { ...EMPTY, rows: value.map((r) => (r && typeof r === 'object' && !Array.isArray(r) ? (r as Row) : { value: r })) };
  }
  if (typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    if (typeof obj.csv === 'string') return { ...EMPTY, mode: 'csv', csv: obj.csv };
    if (Array.isArray(obj.columns) && Array.isArray(obj.rows)) {
      const cols = obj.columns.map(String);
      const rows = (obj.rows as unknown[]).map((r) =>
        Object.fromEntries(cols.map((c, i) => [c, Array.isArray(r) ? r[i] : undefined]).filter(([, v]) => v !== undefined)));
      return { ...EMPTY, rows, columnar: true };
    }
  }
  return { ...EMPTY, mode: 'expression', expression: JSON.stringify(value) };
}

/** Writes back the value in the form it came in (a new table is a list of mappings). */
export function valueFromTable(t: TableValue, kind: string): unknown {
  if (t.mode === 'expression') return t.expression === '' ? undefined : t.expression;
  if (t.mode === 'csv') return { csv: t.csv };
  const rows = t.rows.map(cleanRow);
  if (t.columnar) {
    const columns = columnsFor(kind, rows).map((c) => c.key).filter((k) => rows.some((r) => k in r));
    return { columns, rows: rows.map((r) => columns.map((c) => (c in r ? r[c] : null))) };
  }
  return rows;
}

/** Empty optional cells are left out of a row. */
export function cleanRow(row: Row): Row {
  return Object.fromEntries(Object.entries(row).filter(([, v]) => v !== undefined && v !== ''));
}

export function setCell(rows: Row[], index: number, key: string, value: unknown): Row[] {
  return rows.map((r, i) => {
    if (i !== index) return r;
    const copy = { ...r };
    if (value === undefined || value === '') delete copy[key];
    else copy[key] = value;
    return copy;
  });
}

export function addRow(rows: Row[], kind: string): Row[] {
  const blank: Row = kind === 'history' ? { role: 'user', content: '' } :
    kind === 'tools' ? { name: '', description: '', parameters: { type: 'object', properties: {} } } : {};
  return [...rows, blank];
}

export function removeRow(rows: Row[], index: number): Row[] {
  return rows.filter((_, i) => i !== index);
}

export function moveRow(rows: Row[], index: number, delta: number): Row[] {
  const to = index + delta;
  if (to < 0 || to >= rows.length) return rows;
  const copy = rows.slice();
  const [r] = copy.splice(index, 1);
  copy.splice(to, 0, r);
  return copy;
}

export type CellCheck = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/** A tools row's `parameters` cell: JSON text of a JSON-Schema object (`type: object`). */
export function checkParametersCell(text: string): CellCheck {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `not JSON: ${(e as Error).message}` };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { ok: false, error: 'must be a JSON object' };
  const schema = value as Record<string, unknown>;
  if (schema.type !== 'object') return { ok: false, error: 'a tool\'s parameters need "type": "object"' };
  const props = schema.properties;
  if (props !== undefined && (!props || typeof props !== 'object' || Array.isArray(props))) {
    return { ok: false, error: '"properties" must be an object' };
  }
  if (props) {
    for (const [name, p] of Object.entries(props as Record<string, unknown>)) {
      if (!p || typeof p !== 'object' || Array.isArray(p)) return { ok: false, error: `property "${name}" must be a schema object` };
    }
  }
  const required = schema.required;
  if (required !== undefined) {
    if (!Array.isArray(required) || required.some((r) => typeof r !== 'string')) {
      return { ok: false, error: '"required" must be a list of property names' };
    }
    const missing = required.filter((r) => !props || !(r in (props as object)));
    if (missing.length) return { ok: false, error: `required but not in properties: ${missing.join(', ')}` };
  }
  return { ok: true, value: schema };
}

export function formatJsonCell(value: unknown): string {
  if (value === undefined) return '';
  return JSON.stringify(value, null, 2);
}
