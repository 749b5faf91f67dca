/** Dialogs, the conflict banner, the help panel, toasts. */
import { useEffect, useId, useRef, useState } from 'react';
import { SHORTCUTS } from '../shortcuts';
import { useStudio } from '../store';

export function DialogHost() {
  const dialog = useStudio((s) => s.dialog);
  const setDialog = useStudio((s) => s.setDialog);
  const [value, setValue] = useState('');
  const [busy, setBusy] = useState(false);
  const titleId = useId();
  const inputId = useId();
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    setValue(dialog?.input?.value ?? '');
    setBusy(false);
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

export function DiffView({ diff }: { diff: string }) {
  return (
    <pre className="diff" aria-label="Changes on disk">
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
        <button type="button" className="btn btn--danger" onClick={() => void resolve('reload')}>Reload from disk (drop my edits)</button>
        <button type="button" className="btn" onClick={() => void resolve('keep')}>Keep editing</button>
        <span className="muted small">Keep editing: your next save replaces the file on disk.</span>
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
