/** The YAML pane's frame: its title and state (reading, unsaved), a close button, the editor. */
import { lazy, Suspense } from 'react';
import { isDirty, useStudio } from '../../store';

// CodeMirror loads after the canvas is drawn: its 400 kB are not on the way to a diagram's first picture
const SourcePane = lazy(() => import('./SourcePane').then((m) => ({ default: m.SourcePane })));

export function SourcePanel({ closable }: { closable: boolean }) {
  const parsing = useStudio((s) => s.parsing);
  const loaded = useStudio((s) => s.sourceText !== null);
  const dirty = useStudio(isDirty);
  const path = useStudio((s) => s.path);
  return (
    <section className="source-pane" aria-label="YAML source" data-testid="yaml-pane">
      <div className="source-pane__head">
        <strong>YAML</strong>
        <span className="muted small">{path}</span>
        <span className="field__spacer" />
        <span className="muted small" aria-live="polite">{parsing ? 'reading…' : dirty ? 'unsaved' : ''}</span>
        {closable && (
          <button type="button" className="icon-btn" aria-label="Close the YAML pane" title="Close the YAML pane"
            onClick={() => useStudio.getState().setPaneOpen(false)}>×</button>
        )}
      </div>
      {loaded ? (
        <Suspense fallback={<div className="muted small source-pane__loading">loading the editor…</div>}><SourcePane /></Suspense>
      ) : <div className="muted small source-pane__loading">loading the text…</div>}
    </section>
  );
}
