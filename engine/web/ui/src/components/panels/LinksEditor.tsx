/** A block's links as a list: the ordered `next` links with their `when`, `on_error`, and a Loop's `body`. */
import { useId } from 'react';
import type { Block, Diagram } from '../../api/types';
import { addLink, nextLinks, removeLink, reorderLink, setBody, setErrorLink, setWhen } from '../../model/ops';
import { useStudio } from '../../store';
import { TemplateInput } from '../fields/TemplateInput';

/** A link target picked from the other blocks; a written target that is no block is kept and shown as such. */
export function TargetOptions({ value, others }: { value: unknown; others: string[] }) {
  const written = typeof value === 'string' && value !== '' && !others.includes(value) ? value : null;
  return (
    <>
      {written !== null && <option value={written}>{written} (unknown block)</option>}
      {others.map((id) => <option key={id} value={id}>{id}</option>)}
    </>
  );
}

export function LinksEditor({ block, diagram, whenNames, hasBody }: { block: Block; diagram: Diagram; whenNames: string[]; hasBody: boolean }) {
  const apply = useStudio((s) => s.apply);
  const links = nextLinks(block);
  const others = diagram.blocks.map((b) => b.id).filter((id) => id !== block.id);
  const addId = useId();
  const errId = useId();
  const bodyId = useId();
  return (
    <div className="links">
      <div className="field__label">Next{links.length > 1 ? ' (tried in order; the first whose condition holds is taken)' : ''}</div>
      {links.length === 0 && <div className="muted small">No next link: the run ends here.</div>}
      <ol className="links__list">
        {links.map((l, i) => (
          <li key={i} className="links__item">
            <div className="links__row">
              {links.length > 1 && <span className="order-badge" aria-hidden="true">{i + 1}</span>}
              <span className="links__to">→ <code>{l.to}</code></span>
              <span className="field__spacer" />
              <button type="button" className="icon-btn" aria-label={`Move link to ${l.to} up`} disabled={i === 0}
                onClick={() => apply((d) => reorderLink(d, block.id, i, -1))}>↑</button>
              <button type="button" className="icon-btn" aria-label={`Move link to ${l.to} down`} disabled={i === links.length - 1}
                onClick={() => apply((d) => reorderLink(d, block.id, i, 1))}>↓</button>
              <button type="button" className="icon-btn" aria-label={`Remove link to ${l.to}`}
                onClick={() => apply((d) => removeLink(d, block.id, 'next', i))}>×</button>
            </div>
            <TemplateInput ariaLabel={`Condition for link to ${l.to}`} value={typeof l.when === 'string' ? l.when : ''}
              names={whenNames} placeholder="always — or a condition: {{ ok }}" testId={`field-when-${l.to}`}
              onChange={(t) => apply((d) => setWhen(d, block.id, i, t), { coalesce: `when:${block.id}:${i}` })} />
          </li>
        ))}
      </ol>
      <div className="links__add">
        <label htmlFor={addId} className="sr-only">Add a next link to</label>
        <select id={addId} value="" onChange={(e) => e.target.value && apply((d) => addLink(d, block.id, e.target.value, 'next'))}>
          <option value="">+ Add next link to…</option>
          {others.map((id) => <option key={id} value={id}>{id}</option>)}
        </select>
      </div>
      <div className="links__port">
        <label htmlFor={errId} className="field__label">On error</label>
        <select id={errId} data-testid="field-on_error" value={typeof block.on_error === 'string' ? block.on_error : ''}
          onChange={(e) => apply((d) => setErrorLink(d, block.id, e.target.value || undefined))}>
          <option value="">(none: error level decides)</option>
          <TargetOptions value={block.on_error} others={others} />
        </select>
      </div>
      {hasBody && (
        <div className="links__port">
          <label htmlFor={bodyId} className="field__label">Body (first block of each pass)</label>
          <select id={bodyId} data-testid="field-body" value={typeof block.body === 'string' ? block.body : ''}
            onChange={(e) => apply((d) => setBody(d, block.id, e.target.value || undefined))}>
            <option value="">(none)</option>
            <TargetOptions value={block.body} others={others} />
          </select>
        </div>
      )}
    </div>
  );
}
