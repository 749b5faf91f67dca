/** With nothing selected: the diagram's own keys and its tool registries. */
import type { Diagram } from '../../api/types';
import { useStudio } from '../../store';
import { FieldRow } from '../fields/FieldRow';

export function DiagramProperties({ diagram }: { diagram: Diagram }) {
  const apply = useStudio((s) => s.apply);
  const registries = useStudio((s) => s.registries);
  const problems = useStudio((s) => s.problems);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const setKey = (key: string, value: string) =>
    apply((d) => {
      const copy: Diagram = { ...d };
      if (value === '') delete copy[key]; else copy[key] = value;
      return copy;
    }, { coalesce: `diagram:${key}` });
  const top = (key: string) => problems.filter((p) => !p.block && p.field === key);
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
              : <input id="diagram-tools" data-testid="field-tools" value={diagram.tools ?? ''} onChange={(e) => setKey('tools', e.target.value)} />}
          </FieldRow>
        </section>
      </fieldset>
      {registries.length > 0 && (
        <section className="section">
          <h3>Tool groups</h3>
          {registries.map((r) => (
            <details key={r.group} className="registry-group">
              <summary><code>{r.group}</code> <span className="muted small">{r.tools.length} tools</span></summary>
              <ul className="registry__tools">{r.tools.map((t) => <li key={t.name}><code>{t.name}</code> <span>{t.description}</span></li>)}</ul>
            </details>
          ))}
        </section>
      )}
    </div>
  );
}
