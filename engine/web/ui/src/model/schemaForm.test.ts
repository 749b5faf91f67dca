import { describe, expect, it } from 'vitest';
import { checkNumber, formFields } from './schemaForm';
import type { JsonSchema } from './jsonSchema';

const inputs: JsonSchema = {
  type: 'object',
  required: ['model'],
  properties: {
    model: { type: 'string', title: 'Model', minLength: 1 },
    role: { type: 'string', default: '' },
    temperature: { anyOf: [{ type: 'number', minimum: 0, maximum: 1 }, { type: 'null' }], default: null, title: 'Temperature' },
    max_tokens: { anyOf: [{ type: 'integer', exclusiveMinimum: 0 }, { type: 'null' }], default: null },
    stream: { type: 'boolean', default: false },
    mode: { enum: ['fast', 'slow'], type: 'string' },
    level: { $ref: '#/$defs/Level' },
    history: { anyOf: [{ type: 'array' }, { type: 'object' }] },
    for_each: { description: 'anything' },
    headers: { type: 'object', additionalProperties: true },
  },
  $defs: { Level: { enum: ['Default', 'Ignore', 'Handle'], type: 'string' } },
};

describe('formFields', () => {
  const fields = Object.fromEntries(formFields(inputs, { history: 'history' }).map((f) => [f.name, f]));
  it('chooses a number with its range and step', () => {
    expect(fields.temperature).toMatchObject({ kind: 'number', min: 0, max: 1, nullable: true, step: 0.05, title: 'Temperature' });
    expect(checkNumber(fields.temperature, 1.5)).toMatch(/at most 1/);
    expect(checkNumber(fields.temperature, 0.5)).toBeNull();
  });
  it('chooses integers with exclusive bounds', () => {
    expect(fields.max_tokens).toMatchObject({ kind: 'integer', min: 0, minExclusive: true, step: 1 });
    expect(checkNumber(fields.max_tokens, 0)).toMatch(/more than 0/);
    expect(checkNumber(fields.max_tokens, 1.5)).toMatch(/whole/);
  });
  it('chooses enums, booleans, strings, text, tables', () => {
    expect(fields.mode).toMatchObject({ kind: 'enum', options: ['fast', 'slow'] });
    expect(fields.level).toMatchObject({ kind: 'enum', options: ['Default', 'Ignore', 'Handle'] });
    expect(fields.stream.kind).toBe('boolean');
    expect(fields.model).toMatchObject({ kind: 'string', required: true });
    expect(fields.role.kind).toBe('text');
    expect(fields.history).toMatchObject({ kind: 'table', table: 'history' });
    expect(fields.for_each.kind).toBe('any');
    expect(fields.headers.kind).toBe('mapping');
  });
  it('keeps the schema order and titles missing titles', () => {
    expect(formFields(inputs).map((f) => f.name)[0]).toBe('model');
    expect(fields.max_tokens.title).toBe('Max tokens');
    expect(formFields(null)).toEqual([]);
  });
});
