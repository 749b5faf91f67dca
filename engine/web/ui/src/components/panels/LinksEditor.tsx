/** A block's links as a list: the ordered `next` links with their conditions, the error link, the type's own ports. */
import { useId } from 'react';
import type { Block, Diagram } from '../../api/types';
import { linkCondition, linkTarget, nextLinks, NEXT, portsOf, type LinkKeys } from '../../model/format';
import { addLink, removeLink, reorderLink, setLink, setWhen } from '../../model/ops';
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

/** A key holding one block id (the error link, a port): a choice among the other blocks. */
function SingleLink({ block, linkKey, label, none, others }: { block: Block; linkKey: string; label: string; none: string; others: string[] }) {
  const apply = useStudio((s) => s.apply);
  const id = useId();
  const value = block[linkKey];
  return (
    <div className="links__port">
      <label htmlFor={id} className="field__label">{label}</label>
      <select id={id} data-testid={`field-${linkKey}`} value={typeof value === 'string' ? value : ''}
        onChange={(e) => apply((d) => setLink(d, block.id, linkKey, e.target.value || undefined))}>
        <option value="">{none}</option>
        <TargetOptions value={value} others={others} />
      </select>
    </div>
  );
}

export function LinksEditor({ block, diagram, whenNames, keys }: { block: Block; diagram: Diagram; whenNames: string[]; keys: LinkKeys }) {
  const apply = useStudio((s) => s.apply);
  const links = nextLinks(block, keys);
  const others = diagram.blocks.map((b) => b.id).filter((id) => id !== block.id);
  const addId = useId();
  return (
    <div className="links">
      <div className="field__label">Next{links.length > 1 ? ' (tried in order; the first whose condition holds is taken)' : ''}</div>
      {links.length === 0 && <div className="muted small">No next link: the run ends here.</div>}
      <ol className="links__list">
        {links.map((l, i) => {
          const to = linkTarget(l, keys) ?? '?';
          return (
            <li key={i} className="links__item">
              <div className="links__row">
                {links.length > 1 && <span className="order-badge" aria-hidden="true">{i + 1}</span>}
                <span className="links__to">→ <code>{to}</code></span>
                <span className="field__spacer" />
                <button type="button" className="icon-btn" aria-label={`Move link to ${to} up`} disabled={i === 0}
                  onClick={() => apply((d, k) => reorderLink(d, k, block.id, i, -1))}>↑</button>
                <button type="button" className="icon-btn" aria-label={`Move link to ${to} down`} disabled={i === links.length - 1}
                  onClick={() => apply((d, k) => reorderLink(d, k, block.id, i, 1))}>↓</button>
                <button type="button" className="icon-btn" aria-label={`Remove link to ${to}`}
                  onClick={() => apply((d, k) => removeLink(d, k, block.id, NEXT, i))}>×</button>
              </div>
              <TemplateInput ariaLabel={`Condition for link to ${to}`} value={linkCondition(l, keys) ?? ''}
                names={whenNames} placeholder="always — or a condition: {{ ok }}" testId={`field-when-${to}`}
                onChange={(t) => apply((d, k) => setWhen(d, k, block.id, i, t), { coalesce: `when:${block.id}:${i}` })} />
            </li>
          );
        })}
      </ol>
      <div className="links__add">
        <label htmlFor={addId} className="sr-only">Add a next link to</label>
        <select id={addId} value="" onChange={(e) => e.target.value && apply((d, k) => addLink(d, k, block.id, e.target.value, NEXT))}>
          <option value="">+ Add next link to…</option>
          {others.map((id) => <option key={id} value={id}>{id}</option>)}
        </select>
      </div>
      <SingleLink block={block} linkKey={keys.error} label="On error" none="(none: error level decides)" others={others} />
      {portsOf(block, keys).map((port) => (
        <SingleLink key={port} block={block} linkKey={port} label={`${port[0].toUpperCase()}${port.slice(1)} (a port of ${block.type})`}
          none="(none)" others={others} />
      ))}
    </div>
  );
}
