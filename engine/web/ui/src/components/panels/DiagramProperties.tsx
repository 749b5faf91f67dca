/** With nothing selected: the diagram's own keys and its tool registries. */
import { useEffect, useState } from 'react';
import { api } from '../../api/client';
import type { Diagram, RegistryFile } from '../../api/types';
import { plural } from '../../model/plural';
import { useStudio } from '../../store';
import { FieldRow } from '../fields/FieldRow';

export function DiagramProperties({ diagram }: { diagram: Diagram }) {
  const apply = useStudio((s) => s.apply);
  const registries = useStudio((s) => s.registries);
  const problems = useStudio((s) => s.problems);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const setKey = (key: string, value: string | string[]) =>
    apply((d) => {
      const copy: Diagram = { ...d };
      if (value === '' || (Array.isArray(value) && value.length === 0)) delete copy[key]; else copy[key] = value;
      return copy;
    }, { coalesce: `diagram:${key}` });
  const path = useStudio((s) => s.path);
  // the folder's registry files, listed when the field is first used (the server reads every YAML file for them)
  const [files, setFiles] = useState<RegistryFile[] | null>(null);
  const [wanted, setWanted] = useState(false);
  useEffect(() => {
    if (!wanted) return;
    let live = true;
    api.registries().then((r) => { if (live) setFiles(r); }, () => { if (live) setFiles([]); });
    return () => { live = false; };
  }, [wanted]);
  // the registry files as the diagram names them: relative to its own folder
  const folder = path?.includes('/') ? path.slice(0, path.lastIndexOf('/') + 1) : '';
  const relative = (p: string) => (folder && p.startsWith(folder) ? p.slice(folder.length) : folder ? `${'../'.repeat(folder.split('/').length - 1)}${p}` : p);
  // A list's problems name their entry (`allowed_hosts.1`): each shows at the list's field.
  const top = (key: string) => problems.filter((p) => !p.block && (p.field === key || !!p.field?.startsWith(`${key}.`)));
  return (
    <div className="props">
      <header className="props__head"><div><h2 className="props__title">Diagram</h2>
        <div className="muted small">Select a block or a link to edit it. Drag blocks from the palette.</div></div></header>
      <fieldset disabled={readOnly} className="props__form">
        <section className="section">
          <FieldRow htmlFor="diagram-name" label="Name" problems={top('diagram')}>
            <input id="diagram-name" data-testid="field-diagram" value={diagram.diagram ?? ''} onChange={(e) => setKey('diagram', e.target.value)} />
          </FieldRow>
          <FieldRow htmlFor="diagram-description" label="Description" problems={top('description')}>
            <textarea id="diagram-description" data-testid="field-description" rows={3} value={diagram.description ?? ''}
              onChange={(e) => setKey('description', e.target.value)} />
          </FieldRow>
          <FieldRow htmlFor="diagram-tools" label="Tool registry file" problems={top('tools')} description="e.g. registry/orders.yaml">
            {Array.isArray(diagram.tools)
              ? <div className="muted small" data-testid="field-tools">{diagram.tools.join(', ')} <span>(a list: edit it in the file)</span></div>
              : (
                <>
                  <input id="diagram-tools" data-testid="field-tools" list="registry-files" value={diagram.tools ?? ''}
                    onFocus={() => setWanted(true)} onMouseEnter={() => setWanted(true)}
                    placeholder={files?.length === 0 ? 'no registry file in this folder' : 'choose a registry file'} onChange={(e) => setKey('tools', e.target.value)} />
                  <datalist id="registry-files">
                    {(files ?? []).map((f) => <option key={f.path} value={relative(f.path)}>{f.registry}: {Object.keys(f.groups).join(', ')}</option>)}
                  </datalist>
                </>
              )}
          </FieldRow>
          <FieldRow htmlFor="diagram-allowed_modules" label="Allowed modules" problems={top('allowed_modules')}
            description="modules Function blocks may call, separated by commas: e.g. shop.pricing">
            <ListInput id="diagram-allowed_modules" value={diagram.allowed_modules} onChange={(items) => setKey('allowed_modules', items)} />
          </FieldRow>
          <FieldRow htmlFor="diagram-allowed_hosts" label="Allowed hosts" problems={top('allowed_hosts')}
            description="hosts HttpRequest blocks may call, separated by commas: api.example.com, *.example.com, localhost:8080">
            <ListInput id="diagram-allowed_hosts" value={diagram.allowed_hosts} onChange={(items) => setKey('allowed_hosts', items)} />
          </FieldRow>
          <FieldRow htmlFor="diagram-secrets" label="Secrets" problems={top('secrets')}
            description="environment variables secret('NAME') may read, separated by commas; their values are redacted everywhere">
            <ListInput id="diagram-secrets" value={diagram.secrets} onChange={(items) => setKey('secrets', items)} />
          </FieldRow>
        </section>
      </fieldset>
      {registries.length > 0 && (
        <section className="section">
          <h3>Tool groups</h3>
          {registries.map((r) => (
            <details key={r.group} className="registry-group">
              <summary><code>{r.group}</code> <span className="muted small">{r.description ? `${r.description} · ` : ''}{plural(r.tools.length, 'tool')}</span></summary>
              <ul className="registry__tools">{r.tools.map((t) => <li key={t.name}><code>{t.name}</code> <span>{t.description}</span></li>)}</ul>
            </details>
          ))}
        </section>
      )}
    </div>
  );
}

/** A list of names (modules, hosts, variables) edited as one line, `a.b, c`: the text as typed is kept while it means
 * the same list. */
function ListInput({ id, value, onChange }: { id: string; value: string[] | undefined; onChange: (items: string[]) => void }) {
  const joined = (value ?? []).join(', ');
  const [draft, setDraft] = useState(joined);
  const parse = (text: string) => text.split(',').map((m) => m.trim()).filter((m) => m !== '');
  // An undo, or another edit of the list, shows the diagram's list; a trailing ", " being typed stays.
  const shown = parse(draft).join(', ') === joined ? draft : joined;
  return (
    <input id={id} data-testid={`field-${id.replace('diagram-', '')}`} value={shown} spellCheck={false}
      onChange={(e) => { setDraft(e.target.value); onChange(parse(e.target.value)); }} />
  );
}
