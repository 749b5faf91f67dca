/**
 * Block types from the server: type to filter, Enter adds the first match; drag one onto the canvas, or click it (or
 * press Enter on it) to add it: after the selected block, else near the view's centre, at the first free place.
 */
import { useState } from 'react';
import { useStudio } from '../store';
import { TypeIcon } from './TypeIcon';
import { DRAG_MIME } from './canvas/Canvas';

export function Palette() {
  const palette = useStudio((s) => s.palette);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const hasDiagram = useStudio((s) => !!s.diagram);
  const [filter, setFilter] = useState('');
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = palette.filter((t) => words.every((w) => `${t.type} ${t.description}`.toLowerCase().includes(w)));
  const enabled = !readOnly && hasDiagram;

  // after the selected block (beside the selected link), else at the view's centre; never over another block
  const addInView = (type: string) => useStudio.getState().addFromPalette(type);

  return (
    <section className="palette" aria-label="Block palette">
      <div className="sidebar__head">
        <h2>Blocks</h2>
      </div>
      <input className="palette__filter" type="search" aria-label="Search blocks" placeholder="Search blocks… (Enter adds)" value={filter}
        onChange={(e) => setFilter(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && shown[0] && enabled) { e.preventDefault(); addInView(shown[0].type); setFilter(''); }
          if (e.key === 'Escape') setFilter('');
        }} />
      {shown.length === 0 && <div className="muted small palette__none">No block type matches “{filter}”.</div>}
      <ul className="palette__list">
        {shown.map((t) => (
          <li key={t.type}>
            <div
              className={`palette-item${readOnly || !hasDiagram ? ' is-disabled' : ''}`}
              data-testid={`palette-${t.type}`}
              draggable={!readOnly && hasDiagram}
              role="button"
              tabIndex={0}
              aria-disabled={readOnly || !hasDiagram || undefined}
              title={`${t.description}\nClick or drag onto the canvas.`}
              onDragStart={(e) => {
                e.dataTransfer.setData(DRAG_MIME, t.type);
                e.dataTransfer.setData('text/plain', t.type);
                e.dataTransfer.effectAllowed = 'copy';
              }}
              onKeyDown={(e) => { if ((e.key === 'Enter' || e.key === ' ') && enabled) { e.preventDefault(); addInView(t.type); } }}
              onClick={() => enabled && addInView(t.type)}
            >
              <TypeIcon type={t.type} size={14} />
              <span className="palette-item__text">
                <span className="palette-item__name">{t.type}</span>
                <span className="palette-item__desc">{t.description}</span>
              </span>
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
