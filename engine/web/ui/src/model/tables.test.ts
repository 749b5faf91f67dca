import { describe, expect, it } from 'vitest';
import { addRow, checkParametersCell, columnsFor, moveRow, removeRow, setCell, tableFromValue, valueFromTable } from './tables';
import { formatScalar, parseScalar } from './scalars';

describe('table conversion', () => {
  it('reads a list of mappings and writes it back unchanged', () => {
    const value = [{ role: 'system', content: 'Be brief' }, { role: 'tool', content: '{}', tool_call_id: 't1', extra: 1 }];
    const t = tableFromValue(value);
    expect(t.mode).toBe('table');
    expect(t.rows).toEqual(value);
    expect(valueFromTable(t, 'history')).toEqual(value);
    expect(columnsFor('history', t.rows).map((c) => c.key)).toEqual(['role', 'content', 'tool_call_id', 'name', 'extra']);
  });
  it('reads {columns, rows} and writes the same form', () => {
    const value = { columns: ['role', 'content'], rows: [['user', 'hi'], ['assistant', 'hello']] };
    const t = tableFromValue(value);
    expect(t.rows).toEqual([{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }]);
    expect(valueFromTable(t, 'history')).toEqual(value);
    const edited = { ...t, rows: setCell(t.rows, 1, 'name', 'bot') };
    expect(valueFromTable(edited, 'history')).toEqual({ columns: ['role', 'content', 'name'],
      rows: [['user', 'hi', null], ['assistant', 'hello', 'bot']] });
  });
  it('expression and csv modes', () => {
    expect(tableFromValue('{{ history }}')).toMatchObject({ mode: 'expression', expression: '{{ history }}' });
    expect(tableFromValue({ csv: 'data/x.csv' })).toMatchObject({ mode: 'csv', csv: 'data/x.csv' });
    expect(valueFromTable({ ...tableFromValue(undefined), mode: 'csv', csv: 'a.csv' }, 'history')).toEqual({ csv: 'a.csv' });
    expect(valueFromTable({ ...tableFromValue(undefined), mode: 'expression', expression: '{{ h }}' }, 'history')).toBe('{{ h }}');
    expect(valueFromTable({ ...tableFromValue(undefined), mode: 'expression', expression: '' }, 'history')).toBeUndefined();
    expect(tableFromValue(null)).toMatchObject({ mode: 'table', rows: [] });
  });
  it('edits rows; empty optional cells are left out', () => {
    let rows = addRow([], 'history');
    expect(rows).toEqual([{ role: 'user', content: '' }]);
    rows = setCell(rows, 0, 'content', 'Hello');
    rows = setCell(rows, 0, 'tool_call_id', '');
    rows = addRow(rows, 'history');
    expect(valueFromTable({ ...tableFromValue(undefined), rows }, 'history')).toEqual([{ role: 'user', content: 'Hello' }, { role: 'user' }]);
    expect(moveRow(rows, 1, -1)[0]).toEqual({ role: 'user', content: '' });
    expect(removeRow(rows, 0)).toHaveLength(1);
    expect(addRow([], 'tools')[0]).toMatchObject({ parameters: { type: 'object' } });
  });
});

describe('parameters cell', () => {
  it('accepts a JSON-Schema object', () => {
    const r = checkParametersCell('{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}');
    expect(r.ok).toBe(true);
  });
  it('rejects bad JSON, non-objects and other types', () => {
    expect(checkParametersCell('{type: object}')).toMatchObject({ ok: false, error: expect.stringMatching(/not JSON/) });
    expect(checkParametersCell('[]')).toMatchObject({ ok: false });
    expect(checkParametersCell('{"type": "string"}')).toMatchObject({ ok: false, error: expect.stringMatching(/type/) });
    expect(checkParametersCell('{"type": "object", "properties": []}')).toMatchObject({ ok: false });
    expect(checkParametersCell('{"type": "object", "required": ["x"]}')).toMatchObject({ ok: false, error: expect.stringMatching(/x/) });
  });
});

describe('scalars', () => {
  it('parses YAML/JSON scalars', () => {
    expect(parseScalar('42')).toBe(42);
    expect(parseScalar('0.5')).toBe(0.5);
    expect(parseScalar('true')).toBe(true);
    expect(parseScalar('null')).toBeNull();
    expect(parseScalar('[1, 2]')).toEqual([1, 2]);
    expect(parseScalar('{"csv": "a.csv"}')).toEqual({ csv: 'a.csv' });
    expect(parseScalar('"42"')).toBe('42');
    expect(parseScalar('hello world')).toBe('hello world');
    expect(parseScalar('[oops')).toBe('[oops');
  });
  it('formats values so that they read back the same', () => {
    for (const v of ['text', '42', 'true', 42, true, null, [1], { a: 1 }, '']) expect(parseScalar(formatScalar(v))).toEqual(v);
    expect(formatScalar('plain')).toBe('plain');
    expect(formatScalar('42')).toBe('"42"');
  });
});
