/**
 * Publish in the header (issue 42, item 5): the pill says how the saved file stands against the live published
 * version (the one `diagrama api` serves), Publish pins the saved file as the next version with a note, and the
 * popover lists the versions (number, time, note, author, live) with Rollback. A save changes nothing the API
 * serves until Publish.
 */
import { useEffect, useRef, useState } from 'react';
import { create } from 'zustand';
import { ApiError, api } from '../api/client';
import type { Published } from '../api/types';
import { counts } from '../model/problems';
import { publishBlocked, publishView } from '../model/publish';
import { savedText } from '../model/versions';
import { isDirty, useStudio } from '../store';
import './publish.css';

interface PublishState {
  path: string;
  published: Published | null;
  open: 'versions' | 'publish' | null;
  busy: boolean;
  set: (next: Partial<Omit<PublishState, 'set'>>) => void;
}

/** The open diagram's published versions, kept apart from the document's store: only the header reads them. */
const usePublish = create<PublishState>()((set) => ({
  path: '', published: null, open: null, busy: false, set: (next) => set(next),
}));

function failed(what: string, e: unknown) {
  const problems = e instanceof ApiError && e.data.problems?.length ? `: ${e.data.problems.join('; ')}` : '';
  useStudio.getState().toast(`${what}: ${e instanceof Error ? e.message : String(e)}${problems}`, 'error');
}

/** The pill beside "saved/valid": "published v3", "draft · live v3" or "never published"; a click lists the versions. */
export function PublishStatus() {
  const path = useStudio((s) => s.path) ?? '';
  const hash = useStudio((s) => s.hash);
  const { published, open, path: known } = usePublish();

  useEffect(() => {
    usePublish.getState().set(path === usePublish.getState().path ? {} : { path, published: null, open: null });
    if (!path || !hash) return;
    let live = true;
    api.published(path).then((p) => { if (live && usePublish.getState().path === path) usePublish.getState().set({ published: p }); },
      () => { /* a file that is not a diagram (yet): no pill */ });
    return () => { live = false; };
  }, [path, hash]);

  const view = known === path ? publishView(published) : null;
  if (!view) return null;
  return (
    <span className="publish">
      <button type="button" className={`pill publish__state publish__state--${view.tone}`} title={view.title}
        data-testid="publish-state" aria-expanded={open === 'versions'}
        onClick={() => usePublish.getState().set({ open: open === 'versions' ? null : 'versions' })}>
        {view.label}
      </button>
      {open && <PublishPopover />}
    </span>
  );
}

/** Publish (beside Save): asks for a note, then pins the saved file; disabled with unsaved edits or errors. */
export function PublishButton() {
  const path = useStudio((s) => s.path);
  const diagram = useStudio((s) => s.diagram);
  const blocked = useStudio((s) => publishBlocked({ dirty: isDirty(s), errors: counts(s.problems).errors,
    readOnly: !!s.session?.read_only, saving: s.saving, validating: s.validating }));
  const { open, busy, published } = usePublish();
  if (!path || !diagram) return null;
  return (
    <button type="button" className="btn publish__button" disabled={!!blocked || busy || !published}
      aria-expanded={open === 'publish'} title={blocked ?? 'Publish: pin the saved file as the version the API serves'}
      onClick={() => usePublish.getState().set({ open: open === 'publish' ? null : 'publish' })}>
      Publish
    </button>
  );
}

function PublishPopover() {
  const path = useStudio((s) => s.path) ?? '';
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const blocked = useStudio((s) => publishBlocked({ dirty: isDirty(s), errors: counts(s.problems).errors,
    readOnly: !!s.session?.read_only, saving: s.saving, validating: s.validating }));
  const { published, open, busy, set } = usePublish();
  const [note, setNote] = useState('');
  const noteRef = useRef<HTMLInputElement>(null);
  useEffect(() => { if (open === 'publish') noteRef.current?.focus(); }, [open]);
  if (!published) return null;
  const next = (published.versions[0]?.number ?? 0) + 1;

  const publish = async () => {
    set({ busy: true });
    try {
      const made = await api.publish(path, note);
      set({ published: made, open: null });
      setNote('');
      useStudio.getState().toast(`published v${made.published}: the API serves it now`, 'info');
    } catch (e) {
      failed('not published', e);
    } finally {
      set({ busy: false });
    }
  };
  const rollback = async (version: number) => {
    set({ busy: true });
    try {
      const made = await api.rollback(path, version);
      set({ published: made });
      useStudio.getState().toast(`v${version} is live again (as v${made.published})`, 'info');
    } catch (e) {
      failed('rollback refused', e);
    } finally {
      set({ busy: false });
    }
  };

  return (
    <div className="publish__pop" role="dialog" aria-label="Published versions"
      onKeyDown={(e) => { if (e.key === 'Escape') set({ open: null }); }}>
      {open === 'publish' && (
        <form className="publish__form" onSubmit={(e) => { e.preventDefault(); if (!blocked && !busy) void publish(); }}>
          <label htmlFor="publish-note" className="small">Publish the saved file as v{next}: the API serves it at once</label>
          <input id="publish-note" ref={noteRef} placeholder="What changed (a note kept with the version)"
            value={note} onChange={(e) => setNote(e.target.value)} maxLength={2000} />
          <div className="row-gap">
            <button type="submit" className="btn btn--primary" disabled={!!blocked || busy}>{busy ? 'Publishing…' : `Publish v${next}`}</button>
            <button type="button" className="btn" onClick={() => set({ open: null })}>Cancel</button>
          </div>
        </form>
      )}
      {published.versions.length === 0
        ? <p className="small muted">Never published: the API serves the file as it is.</p>
        : (
          <ul className="publish__list" aria-label="Versions">
            {published.versions.map((v) => (
              <li key={v.number} className={v.live ? 'is-live' : undefined}>
                <strong>v{v.number}</strong>
                <span className="small muted">{savedText(v.time)}</span>
                <span className="publish__note" title={v.note}>{v.note || (v.rollback_of ? `rollback to v${v.rollback_of}` : '—')}</span>
                <span className="small muted">{v.author}</span>
                {v.live ? <span className="pill pill--ok">live</span> : (
                  <button type="button" className="btn btn--small" disabled={readOnly || busy}
                    onClick={() => void rollback(v.number)} aria-label={`Roll back to v${v.number}`}>Rollback</button>
                )}
              </li>
            ))}
          </ul>
        )}
      {published.code_changes.length > 0 && (
        <p className="small publish__code">Code changed since v{published.live}: {published.code_changes.join(', ')}</p>
      )}
    </div>
  );
}
