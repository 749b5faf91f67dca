/** Dialogs, the conflict banner, the help panel, toasts. */
import { useEffect, useId, useRef, useState } from 'react';
import { hasConflictMarkers } from '../model/merge';
import { SHORTCUTS } from '../shortcuts';
import { useStudio } from '../store';

export function DialogHost() {
  const dialog = useStudio((s) => s.dialog);
  const setDialog = useStudio((s) => s.setDialog);
  // A new dialog's value is set while it renders, not in an effect: an effect runs after the input is in the page, and
  // a name typed in that moment (a quick user, a test) was kept, then the suggestion put before it with the caret at
  // its end, so the typed name landed after the suggestion.
  const [shown, setShown] = useState(dialog);
  const [value, setValue] = useState(dialog?.input?.value ?? '');
  const [busy, setBusy] = useState(false);
  if (dialog !== shown) {
    setShown(dialog);
    setValue(dialog?.input?.value ?? '');
    setBusy(false);
  }
  const titleId = useId();
  const inputId = useId();
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (dialog && !dialog.input) requestAnimationFrame(() => confirmRef.current?.focus());
  }, [dialog]);
  if (!dialog) return null;
  const submit = async () => {
    if (dialog.input && !value.trim()) return;
    setBusy(true);
    try {
      await dialog.onConfirm(value.trim());
    } finally {
      setBusy(false);
      setDialog(null);
    }
  };
  return (
    <div className="modal-backdrop" onMouseDown={(e) => { if (e.target === e.currentTarget) setDialog(null); }}>
      <form className="modal" role="dialog" aria-modal="true" aria-labelledby={titleId} onSubmit={(e) => { e.preventDefault(); void submit(); }}>
        <h2 id={titleId}>{dialog.title}</h2>
        {dialog.message && <p>{dialog.message}</p>}
        {dialog.input && (
          <div className="field">
            <label className="field__label" htmlFor={inputId}>{dialog.input.label}</label>
            <input id={inputId} autoFocus value={value} onChange={(e) => setValue(e.target.value)} spellCheck={false} />
          </div>
        )}
        <div className="modal__actions">
          <button type="button" className="btn" onClick={() => setDialog(null)}>Cancel</button>
          <button ref={confirmRef} type="submit" className={`btn ${dialog.danger ? 'btn--danger' : 'btn--primary'}`} disabled={busy}>{dialog.confirm}</button>
        </div>
      </form>
    </div>
  );
}

export function DiffView({ diff, label = 'Changes on disk' }: { diff: string; label?: string }) {
  return (
    <pre className="diff" aria-label={label}>
      {diff.split('\n').map((line, i) => {
        const cls = line.startsWith('+++') || line.startsWith('---') ? 'diff__file' : line.startsWith('@@') ? 'diff__hunk'
          : line.startsWith('+') ? 'diff__add' : line.startsWith('-') ? 'diff__del' : '';
        return <span key={i} className={cls}>{line}{'\n'}</span>;
      })}
    </pre>
  );
}

export function ConflictBanner() {
  const conflict = useStudio((s) => s.conflict);
  const path = useStudio((s) => s.path);
  const resolve = useStudio((s) => s.resolveConflict);
  if (!conflict) return null;
  return (
    <div className="conflict" role="alertdialog" aria-labelledby="conflict-title">
      <div className="conflict__head">
        <strong id="conflict-title">{path} changed on disk</strong>
        <span className="muted small">
          {conflict.kind === 'save' ? 'Your save was refused: the file is not the one you started from.' : 'Someone changed the file while you have unsaved edits.'}
        </span>
      </div>
      {conflict.diff ? <DiffView diff={conflict.diff} /> : <div className="small">Your edits are kept until you choose.</div>}
      <div className="conflict__actions">
        <button type="button" className="btn btn--primary" onClick={() => void resolve('merge')}>Merge (yours, theirs, base)</button>
        <button type="button" className="btn btn--danger" onClick={() => void resolve('reload')}>Reload from disk (drop my edits)</button>
        <button type="button" className="btn" onClick={() => void resolve('overwrite')}>Overwrite with mine</button>
        <span className="muted small">Overwrite: your next save replaces their change.</span>
      </div>
    </div>
  );
}

/** A draft of this file kept from an earlier page (a reload, a crash): restore it or drop it. */
export function DraftBanner() {
  const draft = useStudio((s) => s.draftOffer);
  const hash = useStudio((s) => s.hash);
  if (!draft) return null;
  const when = new Date(draft.at).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  return (
    <div className="conflict conflict--draft" role="alertdialog" aria-labelledby="draft-title">
      <div className="conflict__head">
        <strong id="draft-title">Unsaved edits from {when} were kept</strong>
        <span className="muted small">{draft.hash === hash ? 'The file has not changed since.' : 'The file changed since: restoring merges them.'}</span>
      </div>
      <div className="conflict__actions">
        <button type="button" className="btn btn--primary" onClick={() => void useStudio.getState().restoreDraft()}>Restore my edits</button>
        <button type="button" className="btn" onClick={() => useStudio.getState().dismissDraft()}>Discard them</button>
      </div>
    </div>
  );
}

/** The three-way merge of a conflict: yours, the base, theirs, and the merged text to settle and use. */
export function MergeView() {
  const merge = useStudio((s) => s.merge);
  // set while rendering, as DialogHost's value is: the merged text is in the editor the moment it shows
  const [shown, setShown] = useState(merge);
  const [text, setText] = useState(merge?.result ?? '');
  if (merge !== shown) {
    setShown(merge);
    setText(merge?.result ?? '');
  }
  if (!merge) return null;
  const unsettled = hasConflictMarkers(text);
  return (
    <div className="modal-backdrop">
      <div className="modal modal--merge" role="dialog" aria-modal="true" aria-labelledby="merge-title">
        <h2 id="merge-title">Merge your edits with the file on disk</h2>
        <p className="small">{merge.conflicts ? `${merge.conflicts} place${merge.conflicts > 1 ? 's' : ''} changed on both sides: settle them in the result (between the <<<<<<< and >>>>>>> lines).`
          : 'No change collides: the result keeps both.'}</p>
        <div className="merge">
          {([['Yours', merge.yours], ['Base (as you loaded it)', merge.base], ['Theirs (on disk now)', merge.theirs]] as const).map(([title, body]) => (
            <section key={title} className="merge__side" aria-label={title}>
              <h3>{title}</h3>
              <pre>{body}</pre>
            </section>
          ))}
        </div>
        <label className="field__label" htmlFor="merge-result">Result</label>
        <textarea id="merge-result" className="merge__result" spellCheck={false} value={text} onChange={(e) => setText(e.target.value)} />
        <div className="modal__actions">
          <button type="button" className="btn" onClick={() => useStudio.getState().cancelMerge()}>Cancel</button>
          <button type="button" className="btn btn--primary" disabled={unsettled}
            title={unsettled ? 'settle every conflict first' : 'the result becomes your edit; save to write it'}
            onClick={() => useStudio.getState().acceptMerge(text)}>Use the result</button>
        </div>
      </div>
    </div>
  );
}

export function HelpPanel() {
  const open = useStudio((s) => s.helpOpen);
  const setHelp = useStudio((s) => s.setHelp);
  if (!open) return null;
  return (
    <div className="modal-backdrop" onMouseDown={(e) => { if (e.target === e.currentTarget) setHelp(false); }}>
      <div className="modal modal--wide" role="dialog" aria-modal="true" aria-labelledby="help-title">
        <h2 id="help-title">Keyboard shortcuts</h2>
        <table className="shortcuts">
          <tbody>
            {SHORTCUTS.map(([k, what]) => (
              <tr key={k}><th scope="row">{k.split(' / ').map((part, i) => <span key={i}>{i > 0 && ' / '}<kbd>{part}</kbd></span>)}</th><td>{what}</td></tr>
            ))}
          </tbody>
        </table>
        <div className="modal__actions"><button type="button" className="btn btn--primary" autoFocus onClick={() => setHelp(false)}>Close</button></div>
      </div>
    </div>
  );
}

export function Toasts() {
  const toasts = useStudio((s) => s.toasts);
  const dismiss = useStudio((s) => s.dismissToast);
  return (
    <div className="toasts" role="status" aria-live="polite">
      {toasts.map((t) => (
        <div key={t.id} className={`toast toast--${t.kind}`}>
          <span>{t.message}</span>
          <button type="button" className="icon-btn" aria-label="Dismiss" onClick={() => dismiss(t.id)}>×</button>
        </div>
      ))}
    </div>
  );
}
