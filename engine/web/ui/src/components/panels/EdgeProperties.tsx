/** The selected link: its condition (`when`, with completion), its place in the order, removal. */
import type { Diagram } from '../../api/types';
import { keyOfKind, linkCondition, linkTarget, NEXT, nextLinks } from '../../model/format';
import { parseEdgeId } from '../../model/graph';
import { removeLink, reorderLink, setWhen } from '../../model/ops';
import { scopeNames } from '../../model/completion';
import { useStudio } from '../../store';
import { TemplateInput } from '../fields/TemplateInput';

export function WhenEditor({ diagram, edgeId, autoFocus, compact }: { diagram: Diagram; edgeId: string; autoFocus?: boolean; compact?: boolean }) {
  const apply = useStudio((s) => s.apply);
  const compiled = useStudio((s) => s.compiled);
  const palette = useStudio((s) => s.palette);
  const keys = useStudio((s) => s.links);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const e = parseEdgeId(edgeId);
  const block = e ? diagram.blocks.find((b) => b.id === e.source) : undefined;
  if (!e || !block || !keys || e.kind !== NEXT) return null;
  const links = nextLinks(block, keys);
  const link = links[e.index];
  if (!link) return null;
  const to = linkTarget(link, keys);
  const names = scopeNames(diagram, compiled, palette, block.id, 'when');
  const move = (delta: number) => {
    if (apply((d, k) => reorderLink(d, k, block.id, e.index, delta))) {
      useStudio.getState().selectEdge(`${NEXT}:${block.id}:${e.index + delta}`);
    }
  };
  return (
    <div className={`when-editor${compact ? ' when-editor--compact' : ''}`}>
      <TemplateInput ariaLabel={`Condition of link ${block.id} → ${to}`} value={linkCondition(link, keys) ?? ''}
        names={names} autoFocus={autoFocus} disabled={readOnly} placeholder="always — or a condition: {{ ok }}"
        testId="field-when"
        onChange={(t) => apply((d, k) => setWhen(d, k, block.id, e.index, t), { coalesce: `when:${block.id}:${e.index}` })} />
      <div className="when-editor__actions">
        <span className="muted small">order {e.index + 1} of {links.length}</span>
        <button type="button" className="icon-btn" aria-label="Move link up in the order" disabled={readOnly || e.index === 0} onClick={() => move(-1)}>↑</button>
        <button type="button" className="icon-btn" aria-label="Move link down in the order" disabled={readOnly || e.index === links.length - 1} onClick={() => move(1)}>↓</button>
        <button type="button" className="icon-btn icon-btn--danger" aria-label="Delete link" disabled={readOnly}
          onClick={() => { if (apply((d, k) => removeLink(d, k, block.id, NEXT, e.index))) useStudio.getState().selectEdge(null); }}>×</button>
      </div>
    </div>
  );
}

export function EdgeProperties({ diagram, edgeId }: { diagram: Diagram; edgeId: string }) {
  const apply = useStudio((s) => s.apply);
  const keys = useStudio((s) => s.links);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const e = parseEdgeId(edgeId);
  const block = e ? diagram.blocks.find((b) => b.id === e.source) : undefined;
  if (!e || !block || !keys) return null;
  const key = keyOfKind(e.kind, keys);
  const written = e.kind === NEXT ? nextLinks(block, keys)[e.index] : undefined;
  const target = e.kind === NEXT ? (written ? linkTarget(written, keys) : undefined) : block[key];
  const kindText = e.kind === NEXT ? 'next link' : `${key} link`;
  return (
    <div className="props">
      <header className="props__head">
        <div>
          <h2 className="props__title">{block.id} → {typeof target === 'string' ? target : '?'}</h2>
          <div className="muted small">{kindText}</div>
        </div>
      </header>
      <section className="section">
        {e.kind === NEXT ? (
          <>
            <h3>Condition <span className="muted small">(when)</span></h3>
            <WhenEditor diagram={diagram} edgeId={edgeId} />
          </>
        ) : (
          <button type="button" className="btn btn--danger" disabled={readOnly}
            onClick={() => { if (apply((d, k) => removeLink(d, k, block.id, e.kind))) useStudio.getState().selectEdge(null); }}>
            Remove link
          </button>
        )}
      </section>
    </div>
  );
}
