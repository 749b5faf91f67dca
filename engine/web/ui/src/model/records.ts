/**
 * Data as tables: a list of records (a history, a Loop's collected results, Retrieve's passages) read as rows and
 * columns for the run view; anything else stays JSON.
 */

export interface RecordsTable {
  columns: string[];
  rows: Array<Record<string, unknown>>;
}

const MAX_COLUMNS = 12;

/** A table when `value` is a non-empty list of plain objects (columns: their keys, first seen first); else null. */
export function asRecords(value: unknown): RecordsTable | null {
  if (!Array.isArray(value) || value.length === 0) return null;
  const columns: string[] = [];
  for (const row of value) {
    if (!row || typeof row !== 'object' || Array.isArray(row)) return null;
    for (const key of Object.keys(row)) if (!columns.includes(key)) columns.push(key);
  }
  if (!columns.length || columns.length > MAX_COLUMNS) return null;
  return { columns, rows: value as Array<Record<string, unknown>> };
}

/** A cell's text: strings as they are, nothing for a missing value, JSON for the rest; long texts cut. */
export function cellText(value: unknown, max = 300): string {
  if (value === undefined || value === null) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
