/** Chooses the form control for a property of a block's JSON Schema (inputs_schema / settings_schema). */
import type { JsonSchema } from './jsonSchema';

export type FieldKind = 'number' | 'integer' | 'boolean' | 'enum' | 'string' | 'text' | 'table' | 'mapping' | 'json' | 'any';

export interface FieldSpec {
  name: string;
  kind: FieldKind;
  title: string;
  description: string;
  required: boolean;
  nullable: boolean;
  default?: unknown;
  min?: number;
  max?: number;
  /** the bound is exclusive (e.g. exclusiveMinimum: 0) */
  minExclusive?: boolean;
  maxExclusive?: boolean;
  step?: number | 'any';
  options?: unknown[];
  /** table fields: which table (history, tools) */
  table?: string;
}

/** Resolves a local `$ref` (`#/$defs/X`, `#/definitions/X`). */
export function deref(schema: JsonSchema, root: JsonSchema): JsonSchema {
  let s = schema;
  for (let i = 0; i < 10 && s.$ref; i++) {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(s.$ref);
    const target = m ? (root[m[1]] as Record<string, JsonSchema> | undefined)?.[m[2]] : undefined;
    if (!target) break;
    const rest: JsonSchema = { ...s };
    delete rest.$ref;
    s = { ...target, ...rest };
  }
  return s;
}

function titleCase(name: string): string {
  const words = name.replace(/_+$/, '').replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

const LONG_TEXT = /(^|_)(role|request|prompt|system|message|messages|content|text|template|instructions|collect|body)($|_)/;

export function fieldSpec(name: string, raw: JsonSchema, root: JsonSchema, tableKind?: string): FieldSpec {
  const schema = deref(raw, root);
  let variants = (schema.anyOf ?? schema.oneOf ?? []).map((v) => deref(v, root));
  const nullable = variants.some((v) => v.type === 'null') || (Array.isArray(schema.type) && schema.type.includes('null'));
  variants = variants.filter((v) => v.type !== 'null');
  const main: JsonSchema = variants.length === 1 ? { ...schema, ...variants[0], anyOf: undefined } : schema;
  const spec: FieldSpec = {
    name,
    kind: 'any',
    title: typeof schema.title === 'string' && schema.title ? schema.title : titleCase(name),
    description: String(schema.description ?? main.description ?? ''),
    required: false,
    nullable,
    default: schema.default,
  };
  if (tableKind) return { ...spec, kind: 'table', table: tableKind };
  const type = Array.isArray(main.type) ? main.type.find((t) => t !== 'null') : main.type;
  const options = main.enum ?? (variants.length > 1 && variants.every((v) => v.const !== undefined) ? variants.map((v) => v.const) : undefined);
  if (options) return { ...spec, kind: 'enum', options };
  if (variants.length > 1) return { ...spec, kind: 'json' };
  switch (type) {
    case 'number':
    case 'integer': {
      const min = main.minimum ?? main.exclusiveMinimum;
      const max = main.maximum ?? main.exclusiveMaximum;
      const out: FieldSpec = { ...spec, kind: type, min, max,
        minExclusive: main.minimum === undefined && main.exclusiveMinimum !== undefined,
        maxExclusive: main.maximum === undefined && main.exclusiveMaximum !== undefined };
      if (type === 'integer') out.step = 1;
      else if (typeof main.multipleOf === 'number') out.step = main.multipleOf;
      else if (min !== undefined && max !== undefined && max - min <= 2) out.step = 0.05;
      else out.step = 'any';
      return out;
    }
    case 'boolean':
      return { ...spec, kind: 'boolean' };
    case 'string':
      return { ...spec, kind: LONG_TEXT.test(name) || (main.maxLength ?? 0) > 200 ? 'text' : 'string' };
    case 'object':
      return { ...spec, kind: main.additionalProperties !== false && !main.properties ? 'mapping' : 'json' };
    case 'array':
      return { ...spec, kind: 'json' };
    default:
      return { ...spec, kind: LONG_TEXT.test(name) ? 'text' : 'any' };
  }
}

/** The form's fields, in the schema's order, with `required` marked. */
export function formFields(schema: JsonSchema | null | undefined, tableFields: Record<string, string> = {}): FieldSpec[] {
  if (!schema) return [];
  const root = schema;
  const s = deref(schema, root);
  const required = new Set(s.required ?? []);
  return Object.entries(s.properties ?? {}).map(([name, prop]) => ({
    ...fieldSpec(name, prop, root, tableFields[name]),
    required: required.has(name),
  }));
}

/** A number typed in a field, checked against the spec; returns an error message or null. */
export function checkNumber(spec: FieldSpec, value: number): string | null {
  if (Number.isNaN(value)) return 'not a number';
  if (spec.kind === 'integer' && !Number.isInteger(value)) return 'must be a whole number';
  if (spec.min !== undefined && (spec.minExclusive ? value <= spec.min : value < spec.min)) {
    return `must be ${spec.minExclusive ? 'more than' : 'at least'} ${spec.min}`;
  }
  if (spec.max !== undefined && (spec.maxExclusive ? value >= spec.max : value > spec.max)) {
    return `must be ${spec.maxExclusive ? 'less than' : 'at most'} ${spec.max}`;
  }
  return null;
}
