/**
 * A Wait's answer from the form the page draws for it: the form's JSON Schema read as fields (model/schemaForm), the
 * values typed turned into the answer sent. The server checks the answer against the schema (its problems are the
 * ones shown); only what cannot be sent at all (text that is not JSON where JSON is asked) is caught here.
 */
import type { JsonSchema } from './jsonSchema';
import { formFields, type FieldSpec } from './schemaForm';

/** What a field holds as it is typed: a checkbox's state, or the text of any other control. */
export type Typed = Record<string, string | boolean>;

/** The form's fields; none when the form is no object with properties (the answer is then typed as JSON). */
export function waitFields(form: JsonSchema | null | undefined): FieldSpec[] {
  return form && (form.type === 'object' || form.properties) ? formFields(form) : [];
}

/** The starting values: each field's default, unchecked boxes, empty texts. */
export function initialTyped(fields: FieldSpec[]): Typed {
  return Object.fromEntries(fields.map((f) => [f.name, f.kind === 'boolean' ? f.default === true
    : f.default === undefined || f.default === null ? '' : typeof f.default === 'string' ? f.default : JSON.stringify(f.default)]));
}

const JSON_KINDS = new Set(['json', 'mapping', 'any', 'table']);

/** The answer `typed` makes: empty fields left out, numbers as numbers, JSON read; or the problems that stop it. */
export function answerFrom(fields: FieldSpec[], typed: Typed): { answer: unknown; problems: string[] } {
  const problems: string[] = [];
  if (fields.length === 0) {
    const text = String(typed[''] ?? '').trim();
    try {
      return { answer: text ? JSON.parse(text) : null, problems };
    } catch {
      return { answer: null, problems: ['answer: not JSON'] };
    }
  }
  const answer: Record<string, unknown> = {};
  for (const field of fields) {
    const value = typed[field.name];
    if (field.kind === 'boolean') {
      answer[field.name] = value === true;
      continue;
    }
    const text = typeof value === 'string' ? value : '';
    if (text.trim() === '') continue;
    if (field.kind === 'number' || field.kind === 'integer') {
      answer[field.name] = Number(text);  // a number the schema refuses (NaN, a fraction) is the server's to name
      if (Number.isNaN(answer[field.name])) problems.push(`${field.name}: not a number`);
    } else if (field.kind === 'enum') {
      const option = (field.options ?? []).find((o) => String(o) === text);
      answer[field.name] = option === undefined ? text : option;
    } else if (JSON_KINDS.has(field.kind)) {
      try {
        answer[field.name] = JSON.parse(text);
      } catch {
        problems.push(`${field.name}: not JSON`);
      }
    } else {
      answer[field.name] = text;
    }
  }
  return { answer, problems };
}
