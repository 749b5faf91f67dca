/**
 * Finding your way (issue 43): the block search over the canvas (Ctrl+K / Ctrl+F), the breadcrumbs of a drill-down
 * into Subdiagrams (Parent › child), and the gallery's dialog ("New from example").
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { useReactFlow } from '@xyflow/react';
import { searchBlocks, searchIndex, stepMatch } from '../model/blockSearch';
import { crumbTexts } from '../model/drill';
import { NODE_HEIGHT, NODE_WIDTH } from '../model/sizes';
import { useStudio } from '../store';

export function BlockSearch() {
  const open = useStudio((s) => s.searchOpen);
  const blocks = useStudio((s) => s.diagram?.blocks);
  const [query, setQuery] = useState('');
  const [current, setCurrent] = useState(0);
  const input = useRef<HTMLInputElement>(null);
  const rf = useReactFlow();
  const matches = useMemo(() => (blocks ? searchBlocks(searchIndex(blocks), query) : []), [blocks, query]);

  useEffect(() => {
    if (open) input.current?.select();
  }, [open]);
  useEffect(() => setCurrent(0), [query]);

  const jump = (index: number) => {
    const match = matches[index];
    if (!match) return;
    setCurrent(index);
    useStudio.getState().select([match.id], null);
    const node = rf.getInternalNode(match.id);
    if (!node) return;
    const at = node.internals.positionAbsolute;
    const zoom = Math.max(rf.getZoom(), 0.8);
    void rf.setCenter(at.x + (node.measured.width ?? NODE_WIDTH) / 2, at.y + (node.measured.height ?? NODE_HEIGHT) / 2, { zoom, duration: 0 });
  };

  if (!open) return null;
  const close = () => {
    useStudio.getState().setSearchOpen(false);
    document.querySelector<HTMLElement>('.react-flow__pane')?.focus();
  };
  return (
    <div className="block-search" role="search" aria-label="Find a block">
      <input ref={input} type="search" className="block-search__input" aria-label="Find a block" placeholder="Find a block: id, label, type, text…"
        value={query} onChange={(e) => setQuery(e.target.value)}
        aria-controls="block-search-results" aria-activedescendant={matches[current] ? `block-search-${current}` : undefined}
        onKeyDown={(e) => {
          if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); close(); }
          else if (e.key === 'Enter') { e.preventDefault(); jump(matches.length ? (e.shiftKey ? stepMatch(matches.length, current, -1) : current) : -1); if (!e.shiftKey && matches.length) setCurrent(stepMatch(matches.length, current, 1)); }
          else if (e.key === 'ArrowDown') { e.preventDefault(); jump(stepMatch(matches.length, current, 1)); }
          else if (e.key === 'ArrowUp') { e.preventDefault(); jump(stepMatch(matches.length, current, -1)); }
        }} />
      <span className="muted small block-search__count" data-testid="block-search-count">
        {query ? `${matches.length}${matches.length === 50 ? '+' : ''} found` : ''}
      </span>
      {query && matches.length > 0 && (
        <ul id="block-search-results" className="block-search__results" role="listbox" aria-label="Blocks found">
          {matches.slice(0, 12).map((m, i) => (
            <li key={m.id} id={`block-search-${i}`} role="option" aria-selected={i === current}
              className={i === current ? 'is-current' : undefined} onMouseDown={(e) => { e.preventDefault(); jump(i); }}>
              <strong>{m.id}</strong> <span className="muted small">{m.type}{m.label ? ` · ${m.label}` : ''}</span>
              {m.snippet && <div className="small block-search__snippet"><code>{m.field}</code> {m.snippet}</div>}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Breadcrumbs() {
  const crumbs = useStudio((s) => s.crumbs);
  const shown = useStudio((s) => s.crumbsFor !== null && s.crumbsFor === s.path);
  const path = useStudio((s) => s.path);
  const inRun = useStudio((s) => !!s.run?.data && s.crumbs.length > 0 && s.run.data.diagram === s.crumbs[0].path);
  if (!shown || !path || !crumbs.length) return null;
  const texts = crumbTexts(crumbs, path);
  return (
    <nav className="breadcrumbs" aria-label="Breadcrumbs">
      <ol>
        {crumbs.map((c, i) => (
          <li key={`${c.path}:${i}`}>
            <button type="button" className="btn-link" onClick={() => void useStudio.getState().crumbTo(i)} title={`back to ${c.path}`}>{texts[i]}</button>
            <span className="breadcrumbs__sep" aria-hidden="true">›</span>
            <span className="muted small"> {c.block}</span>
            <span className="breadcrumbs__sep" aria-hidden="true">›</span>
          </li>
        ))}
        <li aria-current="page"><strong>{texts[texts.length - 1]}</strong></li>
      </ol>
      {inRun && <span className="muted small breadcrumbs__run">the shown run's steps in this child</span>}
    </nav>
  );
}

export function GalleryDialog() {
  const open = useStudio((s) => s.galleryOpen);
  const examples = useStudio((s) => s.examples);
  const files = useStudio((s) => s.files);
  const [picked, setPicked] = useState<string | null>(null);
  const [name, setName] = useState('');
  useEffect(() => {
    if (!picked) return;
    const taken = new Set(files.map((f) => f.path));
    const stem = picked.replace(/\.ya?ml$/, '');
    let n = 1;
    let candidate = `${stem}.yaml`;
    while (taken.has(candidate)) candidate = `${stem}-${++n}.yaml`;
    setName(candidate);
  }, [picked, files]);
  if (!open) return null;
  const chosen = examples?.find((e) => e.file === picked);
  const close = () => { setPicked(null); useStudio.getState().setGalleryOpen(false); };
  return (
    <div className="modal-backdrop" onKeyDown={(e) => { if (e.key === 'Escape') close(); }} onMouseDown={(e) => { if (e.target === e.currentTarget) close(); }}>
      <div className="modal gallery" role="dialog" aria-modal="true" aria-label="New from example">
        <h2>New from example</h2>
        {!examples ? <div className="muted">Reading the examples…</div> : examples.length === 0 ? <div className="muted">No examples here.</div> : (
          <ul className="gallery__list" aria-label="Examples">
            {examples.map((e) => (
              <li key={e.file}>
                <button type="button" className={`gallery__item${picked === e.file ? ' is-current' : ''}`} aria-pressed={picked === e.file}
                  onClick={() => setPicked(e.file)}>
                  <strong>{e.name}</strong> <span className="muted small">{e.file}</span>
                  <span className="gallery__description small">{e.description}</span>
                </button>
              </li>
            ))}
          </ul>
        )}
        {chosen && (
          <form className="gallery__copy" onSubmit={(e) => { e.preventDefault(); void useStudio.getState().createFromExample(chosen.file, name); setPicked(null); }}>
            <div className="small">{chosen.needs.length ? <>Copies it with what it loads: <code>{chosen.needs.join(', ')}</code> (files already here are kept).</> : 'Self-contained: copies the one file.'}</div>
            <label className="field__label" htmlFor="gallery-name">New file</label>
            <input id="gallery-name" value={name} onChange={(e) => setName(e.target.value)} />
            <div className="modal__actions">
              <button type="button" className="btn" onClick={close}>Cancel</button>
              <button type="submit" className="btn btn--primary" disabled={!name}>Create</button>
            </div>
          </form>
        )}
        {!chosen && <div className="modal__actions"><button type="button" className="btn" onClick={close}>Cancel</button></div>}
      </div>
    </div>
  );
}
