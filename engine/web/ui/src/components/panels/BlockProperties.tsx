/** The selected block's form: identity, levels, links, inputs (from inputs_schema), settings, set rows, last run. */
import { useEffect, useId, useRef, useState } from 'react';
import type { Block, BlockLevels, BlockType, Diagram } from '../../api/types';
import { formFields } from '../../model/schemaForm';
import { fieldProblems, blockProblems } from '../../model/problems';
import { linkKeysOf, portsOf } from '../../model/format';
import { renameBlock, setField } from '../../model/ops';
import { scopeNames } from '../../model/completion';
import { knowledgeNames } from '../../model/knowledge';
import { useStudio } from '../../store';
import { SchemaField } from '../fields/SchemaField';
import { FieldRow, ProblemList } from '../fields/FieldRow';
import { LevelPicker } from '../fields/LevelPicker';
import { KeyValueRows } from '../fields/KeyValueRows';
import { TypeIcon } from '../TypeIcon';
import { LinksEditor } from './LinksEditor';
import { BlockPin } from '../pins/Pins';
import { StepDetails } from './StepDetails';
import { OutputChips } from './OutputChips';
import { shownRun } from '../../store/nav';

/** The block's own keys this form has a field for (typed by the generated Block: a renamed key fails to compile). */
const FORM_KEYS: Array<keyof Block & string> = ['id', 'label', 'with', 'set'];

/** Whether a problem's field (`with.temperature`, `next[1].when`) is `key` or inside it. */
function under(field: string, keys: Iterable<string>): boolean {
  for (const key of keys) if (field === key || field.startsWith(`${key}.`) || field.startsWith(`${key}[`)) return true;
  return false;
}

export function BlockProperties({ block, type, diagram }: { block: Block; type: BlockType | undefined; diagram: Diagram }) {
  const apply = useStudio((s) => s.apply);
  const compiled = useStudio((s) => s.compiled);
  const problems = useStudio((s) => s.problems);
  const palette = useStudio((s) => s.palette);
  const format = useStudio((s) => s.format);
  const keys = useStudio((s) => s.links);
  const registries = useStudio((s) => s.registries);
  const path = useStudio((s) => s.path);
  const run = useStudio((s) => s.run);
  const shown = useStudio(shownRun);
  const readOnly = useStudio((s) => !!s.session?.read_only);

  const id = block.id;
  const withNames = scopeNames(diagram, compiled, palette, id, 'with');
  const setNames = scopeNames(diagram, compiled, palette, id, 'set');
  const whenNames = scopeNames(diagram, compiled, palette, id, 'when');
  const inputs = formFields(type?.inputs_schema, type?.table_fields ?? {});
  const bases = knowledgeNames(diagram);
  const settings = formFields(type?.settings_schema);
  const settingKeys = new Set(settings.map((s) => s.name));
  const withValue = (block.with ?? {}) as Record<string, unknown>;
  const unknownWith = Object.keys(withValue).filter((k) => !inputs.some((f) => f.name === k));
  // the keys every block has (the format's), the type's ports and settings have their own fields; the rest is kept
  const common = new Set([...(format?.common_block_keys ?? []), ...(keys ? portsOf(block, keys) : [])]);
  const linkFields = keys ? linkKeysOf(block, keys) : [];
  const otherKeys = Object.keys(block).filter((k) => !common.has(k) && !settingKeys.has(k));
  const mine = blockProblems(problems, id);
  // a problem of a key this form has a field for shows at that field; the others at the top
  const fields = [...FORM_KEYS, ...Object.keys(format?.levels ?? {}), ...linkFields, ...settingKeys];
  const covered = (field: string | null) => field !== null && under(field, fields);
  const general = mine.filter((p) => !covered(p.field));
  const steps = shown?.steps.filter((s) => s.block === id) ?? [];
  const focusField = useStudio((s) => s.focusField);
  const form = useRef<HTMLDivElement>(null);
  // a problem or a run's error asked for a field: scroll to it and focus it, once
  useEffect(() => {
    if (!focusField || !form.current) return;
    const target = fieldElement(form.current, focusField);
    useStudio.setState({ focusField: null });
    if (!target) return;
    target.scrollIntoView({ block: 'center' });
    const control = target.matches('input, select, textarea, button') ? target : target.querySelector<HTMLElement>('input, select, textarea, [contenteditable]');
    control?.focus({ preventScroll: true });
    const row = target.closest('.field') ?? target;
    row.classList.add('is-flashing');
    setTimeout(() => row.classList.remove('is-flashing'), 1200);
  }, [focusField]);
  const set = (path: string[], value: unknown, coalesce = true) =>
    apply((d) => setField(d, id, path, value), coalesce ? { coalesce: `${id}:${path.join('.')}` } : undefined);

  return (
    <div className="props" ref={form}>
      <header className="props__head">
        <TypeIcon type={block.type} size={18} />
        <div>
          <h2 className="props__title">{block.label || id}</h2>
          <div className="muted small">{block.type}{type ? ` — ${type.description}` : ' — unknown block type'}</div>
        </div>
      </header>
      <ProblemList problems={general} />

      {run && (
        <section className="section section--run" aria-label="Last run of this block">
          <h3>Run {run.data ? `(${run.data.status})` : ''}</h3>
          <StepDetails steps={steps} passes={shown?.passes?.[id]} />
        </section>
      )}
      {type?.outputs.includes('result') && <BlockPin block={id} />}

      <fieldset disabled={readOnly} className="props__form">
        <section className="section">
          <h3>Block</h3>
          <IdField block={block} />
          <FieldRow htmlFor={`label-${id}`} label="Label" problems={fieldProblems(problems, id, 'label')}>
            <input id={`label-${id}`} data-testid="field-label" value={block.label ?? ''} placeholder="shown on the canvas instead of the id"
              onChange={(e) => set(['label'], e.target.value === '' ? undefined : e.target.value)} />
          </FieldRow>
          <div className="two-cols">
            {Object.entries(format?.levels ?? {}).map(([key, names]) => (
              <LevelPicker key={key} name={key} names={names} value={block[key]} effective={compiled?.levels[id]?.[key as keyof BlockLevels]}
                problems={fieldProblems(problems, id, key)} onChange={(v) => set([key], v, false)} />
            ))}
          </div>
        </section>

        {inputs.length > 0 && (
          <section className="section">
            <h3>Inputs <span className="muted small">(with)</span></h3>
            {inputs.map((f) => (
              <SchemaField key={f.name} spec={f} value={withValue[f.name]} names={withNames} registries={registries} diagramPath={path ?? undefined}
                knowledge={bases} problems={fieldProblems(problems, id, `with.${f.name}`)} onChange={(v) => set(['with', f.name], v)} />
            ))}
            {unknownWith.map((k) => (
              <FieldRow key={k} label={`${k} (not an input of ${block.type})`} problems={fieldProblems(problems, id, `with.${k}`)}
                onReset={() => set(['with', k], undefined, false)}>
                <pre className="json">{JSON.stringify(withValue[k], null, 2)}</pre>
              </FieldRow>
            ))}
          </section>
        )}

        {settings.length > 0 && (
          <section className="section">
            <h3>Settings</h3>
            {settings.map((f) => (
              <SchemaField key={f.name} spec={f} value={block[f.name]} names={withNames} registries={registries} diagramPath={path ?? undefined}
                problems={fieldProblems(problems, id, f.name)} onChange={(v) => set([f.name], v)} />
            ))}
          </section>
        )}

        <section className="section">
          <h3>Links</h3>
          {keys && <LinksEditor block={block} diagram={diagram} whenNames={whenNames} keys={keys} />}
          <ProblemList problems={mine.filter((p) => p.field && under(p.field, linkFields))} />
        </section>

        <section className="section">
          <h3>Set variables <span className="muted small">(after the block runs)</span></h3>
          {type?.outputs.length ? <OutputChips outputs={type.outputs} blockId={id} set={block.set} form={form}
            onAddSet={(key, value) => set(['set', key], value, false)} /> : null}
          <KeyValueRows label="Set" value={block.set} templates names={setNames} testId="field-set" keyLabel="Variable" valueLabel="Template"
            addLabel="+ Add variable" onChange={(v) => set(['set'], v)} />
          <ProblemList problems={fieldProblems(problems, id, 'set')} />
        </section>

        {otherKeys.length > 0 && (
          <section className="section">
            <h3>Other keys <span className="muted small">(kept as written)</span></h3>
            {otherKeys.map((k) => (
              <FieldRow key={k} label={k} problems={fieldProblems(problems, id, k)}>
                <pre className="json">{JSON.stringify(block[k], null, 2)}</pre>
              </FieldRow>
            ))}
          </section>
        )}
      </fieldset>
    </div>
  );
}

/**
 * The form's element for a problem's field: `with.temperature` and `temperature` are `field-temperature`,
 * `next[1].when` the link's condition, `on_error` its picker; else the nearest field of the key it is under.
 */
export function fieldElement(form: HTMLElement, field: string): HTMLElement | null {
  const parts = field.split(/[.[\]]+/).filter(Boolean);
  const candidates: string[] = [];
  if (parts[0] === 'with' && parts[1]) candidates.push(`field-${parts[1]}`);
  if (parts[0] === 'next') candidates.push('field-next', 'field-on_error');
  candidates.push(`field-${parts[0]}`);
  if (parts.length > 1) candidates.push(`field-${parts[parts.length - 1]}`);
  for (const id of candidates) {
    const found = form.querySelector<HTMLElement>(`[data-testid="${CSS.escape(id)}"]`);
    if (found) return found;
  }
  return null;
}

/** The id, renamed on Enter or leaving the field; every link naming it follows. */
function IdField({ block }: { block: Block }) {
  const apply = useStudio((s) => s.apply);
  const problems = useStudio((s) => s.problems);
  const inputId = useId();
  const [draft, setDraft] = useState(block.id);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => { setDraft(block.id); setError(null); }, [block.id]);
  const commit = () => {
    const to = draft.trim();
    const { diagram, links } = useStudio.getState();
    if (to === block.id || !diagram || !links) { setError(null); return; }
    try {
      renameBlock(diagram, links, block.id, to);
    } catch (e) {
      setError((e as Error).message);
      return;
    }
    setError(null);
    if (apply((d, keys) => renameBlock(d, keys, block.id, to))) {
      const s = useStudio.getState();
      s.select(s.selection.map((x) => (x === block.id ? to : x)), s.selectedEdge);
    }
  };
  return (
    <FieldRow htmlFor={inputId} label="Id" required problems={fieldProblems(problems, block.id, 'id')}
      description="renaming updates every link to this block">
      <input id={inputId} data-testid="field-id" value={draft} spellCheck={false} aria-invalid={!!error || undefined}
        onChange={(e) => setDraft(e.target.value)} onBlur={commit}
        onKeyDown={(e) => { if (e.key === 'Enter') commit(); if (e.key === 'Escape') setDraft(block.id); }} />
      {error && <div className="inline-error" role="alert">{error}</div>}
    </FieldRow>
  );
}
