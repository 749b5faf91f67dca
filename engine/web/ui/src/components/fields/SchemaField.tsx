/** One form field, chosen from its JSON Schema (see model/schemaForm). */
import { useEffect, useId, useState } from 'react';
import type { Problem, Registry } from '../../api/types';
import { checkNumber, type FieldSpec } from '../../model/schemaForm';
import { formatScalar, parseScalar } from '../../model/scalars';
import { FieldRow } from './FieldRow';
import { TemplateInput } from './TemplateInput';
import { KeyValueRows } from './KeyValueRows';
import { TableField } from './TableField';

export interface SchemaFieldProps {
  spec: FieldSpec;
  value: unknown;
  onChange: (value: unknown) => void;
  names: string[];
  problems: Problem[];
  registries?: Registry[];
  diagramPath?: string;
  /** the diagram's knowledge bases: a `knowledge` field (Retrieve's) picks one of them */
  knowledge?: string[];
}

const isTemplate = (v: unknown) => typeof v === 'string' && v.includes('{{');

function defaultText(spec: FieldSpec): string | undefined {
  if (spec.default === undefined || spec.default === null || spec.default === '') return undefined;
  return `default: ${formatScalar(spec.default)}`;
}

export function SchemaField(props: SchemaFieldProps) {
  const { spec, value, onChange, names, problems } = props;
  const id = useId();
  const invalid = problems.some((p) => p.severity === 'error');
  const present = value !== undefined;
  const onReset = present && !spec.required ? () => onChange(undefined) : undefined;
  const testId = `field-${spec.name}`;
  const scalar = spec.kind === 'number' || spec.kind === 'integer' || spec.kind === 'boolean' || spec.kind === 'enum';
  const templated = scalar && isTemplate(value);
  const row = { htmlFor: id, label: spec.title, required: spec.required, description: spec.description, problems, onReset };

  if (templated) {
    return (
      <FieldRow {...row} extra={<button type="button" className="btn-link" onClick={() => onChange(undefined)}>use a fixed value</button>}>
        <TemplateInput id={id} value={String(value)} onChange={(v) => onChange(v === '' ? undefined : v)} names={names}
          testId={testId} invalid={invalid} />
      </FieldRow>
    );
  }
  const exprButton = scalar ? (
    <button type="button" className="btn-link mono" title="compute this value with a template"
      aria-label={`Use a template expression for ${spec.title}`} onClick={() => onChange(templatePlaceholder(value, names))}>{'{{ }}'}</button>
  ) : undefined;

  const knowledge = props.knowledge ?? [];
  if (spec.name === 'knowledge' && spec.kind === 'string' && knowledge.length > 0 && !isTemplate(value)) {
    const current = typeof value === 'string' ? value : '';
    return (
      <FieldRow {...row} extra={<button type="button" className="btn-link mono" title="compute the name with a template"
        aria-label={`Use a template expression for ${spec.title}`} onClick={() => onChange(templatePlaceholder(value, names))}>{'{{ }}'}</button>}>
        <select id={id} data-testid={testId} value={current} aria-invalid={invalid || undefined}
          onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)}>
          <option value="">(pick a knowledge base)</option>
          {knowledge.map((name) => <option key={name} value={name}>{name}</option>)}
          {current && !knowledge.includes(current) && <option value={current}>{current} (not declared in this diagram)</option>}
        </select>
      </FieldRow>
    );
  }

  switch (spec.kind) {
    case 'number':
    case 'integer':
      return (
        <FieldRow {...row} extra={exprButton}>
          <NumberInput id={id} spec={spec} value={value} onChange={onChange} testId={testId} invalid={invalid} />
        </FieldRow>
      );
    case 'boolean':
      return (
        <FieldRow {...row} extra={exprButton}>
          <label className="check">
            <input id={id} type="checkbox" data-testid={testId} checked={value === undefined ? spec.default === true : value === true}
              onChange={(e) => onChange(e.target.checked)} />
            <span>{value === undefined ? `not set (${spec.default === true ? 'true' : 'false'})` : value ? 'true' : 'false'}</span>
          </label>
        </FieldRow>
      );
    case 'enum':
      return (
        <FieldRow {...row} extra={exprButton}>
          <select id={id} data-testid={testId} value={value === undefined ? '' : String(value)} aria-invalid={invalid || undefined}
            onChange={(e) => {
              const chosen = spec.options?.find((o) => String(o) === e.target.value);
              onChange(e.target.value === '' ? undefined : chosen ?? e.target.value);
            }}>
            <option value="">{spec.default !== undefined && spec.default !== null ? `Default (${String(spec.default)})` : '(not set)'}</option>
            {spec.options?.map((o) => <option key={String(o)} value={String(o)}>{String(o)}</option>)}
          </select>
        </FieldRow>
      );
    case 'string':
    case 'text':
      return (
        <FieldRow {...row}>
          <TemplateInput id={id} value={value === undefined || value === null ? '' : typeof value === 'string' ? value : formatScalar(value)}
            onChange={(v) => onChange(v === '' && !spec.required ? undefined : v)} names={names} testId={testId}
            multiline={spec.kind === 'text'} invalid={invalid} placeholder={defaultText(spec)} />
        </FieldRow>
      );
    case 'mapping':
      return (
        <FieldRow {...row} group>
          <KeyValueRows label={spec.title} value={value} onChange={onChange} testId={testId} />
        </FieldRow>
      );
    case 'table':
      return (
        <FieldRow {...row} group>
          <TableField label={spec.title} kind={spec.table ?? ''} value={value} onChange={onChange} names={names} testId={testId}
            registries={props.registries ?? []} diagramPath={props.diagramPath} />
        </FieldRow>
      );
    default:
      return (
        <FieldRow {...row}>
          <AnyInput id={id} value={value} onChange={onChange} names={names} testId={testId} invalid={invalid}
            multiline={spec.kind === 'json'} placeholder={defaultText(spec)} />
        </FieldRow>
      );
  }
}

/**
 * Numbers: typed text that is not a number yet ("-", "1e") is kept here and not written. A number is written
 * at once, even outside the schema's range: the field must never show a value the diagram does not have, and
 * the server's validation then flags it on the field and the block. The local range message shows until the
 * server's problem arrives.
 */
function NumberInput({ id, spec, value, onChange, testId, invalid }: {
  id: string; spec: FieldSpec; value: unknown; onChange: (v: unknown) => void; testId: string; invalid: boolean;
}) {
  const outside = value === undefined || value === null ? '' : String(value);
  const [text, setText] = useState(outside);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setText((t) => (Number(t) === Number(outside) && t !== '' && outside !== '' ? t : outside));
  }, [outside]);
  const placeholder = spec.default !== undefined && spec.default !== null ? `default: ${String(spec.default)}` : undefined;
  const range = [spec.min !== undefined ? `${spec.minExclusive ? '>' : '≥'} ${spec.min}` : '', spec.max !== undefined ? `${spec.maxExclusive ? '<' : '≤'} ${spec.max}` : '']
    .filter(Boolean).join(', ');
  return (
    <div className="number">
      <input
        id={id}
        type="number"
        inputMode="decimal"
        data-testid={testId}
        value={text}
        min={spec.min}
        max={spec.max}
        step={spec.step ?? 'any'}
        placeholder={placeholder}
        aria-invalid={invalid || !!error || undefined}
        aria-describedby={error && !invalid ? `${id}-err` : undefined}
        onChange={(e) => {
          const t = e.target.value;
          setText(t);
          if (t.trim() === '') { setError(null); onChange(undefined); return; }
          const n = Number(t);
          setError(checkNumber(spec, n));
          if (Number.isFinite(n)) onChange(n);
        }}
      />
      {range && <span className="number__range">{range}</span>}
      {spec.kind === 'number' && spec.min !== undefined && spec.max !== undefined && spec.max - spec.min <= 2 && (
        <input type="range" aria-label={`${spec.title} slider`} min={spec.min} max={spec.max} step={spec.step ?? 0.01}
          value={typeof value === 'number' ? value : Number(spec.default ?? spec.min)}
          onChange={(e) => { const n = Number(e.target.value); setText(String(n)); setError(null); onChange(n); }} />
      )}
      {error && !invalid && <div className="inline-error" id={`${id}-err`} role="alert">{error}</div>}
    </div>
  );
}

/** Fields of any type (`Any` in pydantic): a template string, or a YAML/JSON value. */
/**
 * What the `{{ }}` button writes: a template that already validates (issue 43), never an empty `{{  }}`: the field's
 * value as a literal, else the first name in scope, else `none`.
 */
export function templatePlaceholder(value: unknown, names: string[]): string {
  if (value !== undefined && value !== null && value !== '') return `{{ ${JSON.stringify(value)} }}`;
  return `{{ ${names[0] ?? 'none'} }}`;
}

function AnyInput({ id, value, onChange, names, testId, invalid, multiline, placeholder }: {
  id: string; value: unknown; onChange: (v: unknown) => void; names: string[]; testId: string; invalid: boolean;
  multiline: boolean; placeholder?: string;
}) {
  const text = value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value, null, value && typeof value === 'object' ? 2 : undefined);
  const [draft, setDraft] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  return (
    <>
      <TemplateInput id={id} value={draft ?? text} names={names} testId={testId} invalid={invalid || !!error}
        multiline={multiline || text.includes('\n')} placeholder={placeholder}
        onChange={(t) => {
          if (t.trim() === '') { setDraft(null); setError(null); onChange(undefined); return; }
          const trimmed = t.trim();
          if (/^[[{]/.test(trimmed) && !trimmed.startsWith('{{')) {
            try {
              onChange(JSON.parse(trimmed));
              setDraft(t);
              setError(null);
            } catch (e) {
              setDraft(t);
              setError(`not JSON yet: ${(e as Error).message}`);
            }
            return;
          }
          setDraft(null);
          setError(null);
          onChange(typeof value === 'string' || trimmed.includes('{{') ? t : parseScalar(t));
        }}
        onBlur={() => { if (!error) setDraft(null); }}
      />
      {error && <div className="inline-error" role="alert">{error}</div>}
    </>
  );
}
