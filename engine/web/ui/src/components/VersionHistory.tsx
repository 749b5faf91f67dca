/**
 * The open file's version history (the texts the studio saved, newest first): pick one to see what restoring it
 * would change, and restore it as an unsaved edit (the YAML pane shows it; a save writes it).
 */
import { useEffect, useState } from 'react';
import { api } from '../api/client';
import type { Version } from '../api/types';
import { plural } from '../model/plural';
import { lineDiff, savedText } from '../model/versions';
import { useStudio } from '../store';
import { DiffView } from './Overlays';

export function VersionHistory() {
  const open = useStudio((s) => s.historyOpen);
  const path = useStudio((s) => s.path);
  const hash = useStudio((s) => s.hash);
  const [versions, setVersions] = useState<Version[] | null>(null);
  const [chosen, setChosen] = useState<{ version: Version; text: string; diff: string } | null>(null);
  const close = () => useStudio.getState().setHistoryOpen(false);

  useEffect(() => {
    setVersions(null);
    setChosen(null);
    if (!open || !path) return;
    let live = true;
    api.versions(path).then((v) => { if (live) setVersions(v); }, (e: unknown) => {
      if (!live) return;
      setVersions([]);
      useStudio.getState().toast(`version history: ${e instanceof Error ? e.message : String(e)}`, 'error');
    });
    return () => { live = false; };
  }, [open, path]);

  if (!open || !path) return null;

  const choose = async (version: Version) => {
    try {
      const [{ text }, current] = await Promise.all([api.version(path, version.id), api.source(path)]);
      setChosen({ version, text, diff: lineDiff(current.text, text) });
    } catch (e) {
      useStudio.getState().toast(`cannot read that version: ${e instanceof Error ? e.message : String(e)}`, 'error');
    }
  };
  const restore = async () => {
    if (!chosen) return;
    close();
    await useStudio.getState().restoreText(chosen.text);
    useStudio.getState().toast(`restored the version of ${savedText(chosen.version.saved)}: save to write it`, 'info');
  };

  return (
    <div className="modal-backdrop" onMouseDown={(e) => { if (e.target === e.currentTarget) close(); }}
      onKeyDown={(e) => { if (e.key === 'Escape') close(); }}>
      <div className="modal modal--wide versions" role="dialog" aria-modal="true" aria-labelledby="versions-title">
        <h2 id="versions-title">Version history of {path}</h2>
        {versions === null ? <p className="muted small">Loading…</p> : versions.length === 0
          ? <p className="small">No saved versions yet: the studio keeps each text it saves (and the text a save replaced).</p>
          : (
            <ul className="versions__list" aria-label="Saved versions">
              {versions.map((v) => (
                <li key={v.id}>
                  <button type="button" className={`versions__item${chosen?.version.id === v.id ? ' is-on' : ''}`}
                    aria-pressed={chosen?.version.id === v.id} onClick={() => void choose(v)}>
                    <span>{savedText(v.saved)}</span>
                    <span className="muted small">{plural(v.lines, 'line')}{v.hash === hash ? ' · the file now' : ''}</span>
                  </button>
                </li>
              ))}
            </ul>
          )}
        {chosen && (chosen.diff ? <DiffView diff={chosen.diff} label="What restoring it changes" />
          : <p className="small">This version is the file as it is now.</p>)}
        <div className="modal__actions">
          <button type="button" className="btn" autoFocus onClick={close}>Close</button>
          <button type="button" className="btn btn--primary" disabled={!chosen || !chosen.diff || !!useStudio.getState().session?.read_only}
            onClick={() => void restore()}>Restore this version</button>
        </div>
      </div>
    </div>
  );
}
