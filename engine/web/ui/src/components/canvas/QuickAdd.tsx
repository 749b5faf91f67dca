/**
 * The quick-add search, opened by a handle's "+" or a link dropped on the empty canvas: type to filter the block
 * types, ↑ ↓ to choose, Enter to add. The block goes to the first free place near where it was asked for and is
 * linked from the handle it was opened from (next, on_error, or a port such as a Loop's body).
 */
import { useEffect, useRef, useState } from 'react';
import { useStudio } from '../../store';
import { TypeIcon } from '../TypeIcon';

export function QuickAdd() {
  const q = useStudio((s) => s.quickAdd);
  const palette = useStudio((s) => s.palette);
  const [filter, setFilter] = useState('');
  const [at, setAt] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => { setFilter(''); setAt(0); }, [q]);
  useEffect(() => {
    if (!q) return;
    const close = (e: MouseEvent) => { if (!box.current?.contains(e.target as Node)) useStudio.getState().openQuickAdd(null); };
    window.addEventListener('mousedown', close);
    return () => window.removeEventListener('mousedown', close);
  }, [q]);
  if (!q) return null;
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = palette.filter((t) => !t.is_start && words.every((w) => `${t.type} ${t.description}`.toLowerCase().includes(w)));
  const choose = (type: string) => {
    const s = useStudio.getState();
    s.openQuickAdd(null);
    s.addBlockNear(type, q.flow, q.source ? { source: q.source, handle: q.handle } : undefined);
  };
  const left = Math.max(8, Math.min(q.screen.x, window.innerWidth - 300));
  const top = Math.max(8, Math.min(q.screen.y, window.innerHeight - 320));
  return (
    <div ref={box} className="quick-add" style={{ left, top }} role="dialog" aria-label={q.source ? `Add a block after ${q.source}` : 'Add a block'}>
      <input className="quick-add__filter" type="search" autoFocus aria-label="Search block types" placeholder="Search blocks… (Enter adds)"
        value={filter} onChange={(e) => { setFilter(e.target.value); setAt(0); }}
        onKeyDown={(e) => {
          e.stopPropagation();
          if (e.key === 'ArrowDown') { e.preventDefault(); setAt((i) => Math.min(i + 1, shown.length - 1)); }
          else if (e.key === 'ArrowUp') { e.preventDefault(); setAt((i) => Math.max(i - 1, 0)); }
          else if (e.key === 'Enter' && shown[at]) { e.preventDefault(); choose(shown[at].type); }
          else if (e.key === 'Escape') { e.preventDefault(); useStudio.getState().openQuickAdd(null); }
        }} />
      <ul className="quick-add__list" role="listbox" aria-label="Block types">
        {shown.slice(0, 40).map((t, i) => (
          <li key={t.type} role="option" aria-selected={i === at} className={i === at ? 'is-active' : undefined}
            onMouseEnter={() => setAt(i)} onMouseDown={(e) => { e.preventDefault(); choose(t.type); }}>
            <TypeIcon type={t.type} size={12} /> <span className="quick-add__name">{t.type}</span>
            <span className="quick-add__desc">{t.description}</span>
          </li>
        ))}
        {!shown.length && <li className="muted small">No block type matches “{filter}”.</li>}
      </ul>
    </div>
  );
}
