/** The selected link: its condition (`when`, with completion), its place in the order, removal. */
import type { Diagram } from '../../api/types';
import { parseEdgeId } from '../../model/graph';
import { nextLinks, removeLink, reorderLink, setWhen } from '../../model/ops';
import { scopeNames } from '../../model/completion';
import { useStudio } from '../../store';
import { TemplateInput } from '../fields/TemplateInput';

export function WhenEditor({ diagram, edgeId, autoFocus, compact }: { diagram: Diagram; edgeId: string; autoFocus?: boolean; compact?: boolean }) {
  const apply = useStudio((s) => s.apply);
  const compiled = useStudio((s) => s.compiled);
  const palette = useStudio((s) => s.palette);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const e = parseEdgeId(edgeId);
  const block = e ? diagram.blocks.find((b) => b.id === e.source) : undefined;
  if (!e || !block) return null;
  const links = nextLinks(block);
  const link = links[e.index];
  if (e.kind !== 'next' || !link) return null;
  const names = scopeNames(diagram, compiled, palette, block.id, 'when');
  const move = (delta: number) => {
    if (apply((d) => reorderLink(d, block.id, e.index, delta))) {
      useStudio.setState({ selectedEdge: `next:${block.id}:${e.index + delta}` });
    }
  };
  return (
    <div className={`when-editor${compact ? ' when-editor--compact' : ''}`}>
      <TemplateInput ariaLabel={`Condition of link ${block.id} → ${link.to}`} value={typeof link.when === 'string' ? link.when : ''}
        names={names} autoFocus={autoFocus} disabled={readOnly} placeholder="always — or a condition: {{ ok }}"
        testId="field-when"
        onChange={(t) => apply((d) => setWhen(d, block.id, e.index, t), { coalesce: `when:${block.id}:${e.index}` })} />
      <div className="when-editor__actions">
        <span className="muted small">order {e.index + 1} of {links.length}</span>
        <button type="button" className="icon-btn" aria-label="Move link up in the order" disabled={readOnly || e.index === 0} onClick={() => move(-1)}>↑</button>
        <button type="button" className="icon-btn" aria-label="Move link down in the order" disabled={readOnly || e.index === links.length - 1} onClick={() => move(1)}>↓</button>
        <button type="button" className="icon-btn icon-btn--danger" aria-label="Delete link" disabled={readOnly}
          onClick={() => { if (apply((d) => removeLink(d, block.id, 'next', e.index))) useStudio.setState({ selectedEdge: null }); }}>×</button>
      </div>
    </div>
  );
}

export function EdgeProperties({ diagram, edgeId }: { diagram: Diagram; edgeId: string }) {
  const apply = useStudio((s) => s.apply);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const e = parseEdgeId(edgeId);
  if (!e) return null;
  const block = diagram.blocks.find((b) => b.id === e.source);
  if (!block) return null;
  const target = e.kind === 'next' ? nextLinks(block)[e.index]?.to : e.kind === 'error' ? block.on_error : block.body;
  const kindText = e.kind === 'next' ? 'next link' : e.kind === 'error' ? 'error link (on_error)' : 'loop body link';
  return (
    <div className="props">
      <header className="props__head">
        <div>
          <h2 className="props__title">{block.id} → {target}</h2>
          <div className="muted small">{kindText}</div>
        </div>
      </header>
      <section className="section">
        {e.kind === 'next' ? (
          <>
            <h3>Condition <span className="muted small">(when)</span></h3>
            <WhenEditor diagram={diagram} edgeId={edgeId} />
          </>
        ) : (
          <button type="button" className="btn btn--danger" disabled={readOnly}
            onClick={() => { if (apply((d) => removeLink(d, block.id, e.kind))) useStudio.setState({ selectedEdge: null }); }}>
            Remove link
          </button>
        )}
      </section>
    </div>
  );
}
