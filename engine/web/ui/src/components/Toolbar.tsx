/** Top bar: file name and state, undo/redo, layout, fit, save, help. */
import { counts } from '../model/problems';
import { isDirty, paneShown, useStudio } from '../store';
import { Icon } from './Icon';
import { PublishButton, PublishStatus } from './PublishControl';

const NEXT_THEME = { system: 'dark', dark: 'light', light: 'system' } as const;

export function Toolbar() {
  const path = useStudio((s) => s.path);
  const diagram = useStudio((s) => s.diagram);
  const dirty = useStudio(isDirty);
  const canUndo = useStudio((s) => s.past.length > 0);
  const canRedo = useStudio((s) => s.future.length > 0);
  const saving = useStudio((s) => s.saving);
  const validating = useStudio((s) => s.validating);
  const problems = useStudio((s) => s.problems);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const paneOn = useStudio(paneShown);
  const theme = useStudio((s) => s.theme);
  const hasText = useStudio((s) => s.sourceText !== null);
  const { undo, redo, save, apply, setHelp } = useStudio.getState();
  const c = counts(problems);

  const autoLayout = () => {
    const ok = apply((d) => ({ ...d, blocks: d.blocks.map((b) => {
      if (!('position' in b)) return b;
      const copy = { ...b };
      delete copy.position;
      return copy;
    }) }));
    if (ok) {
      useStudio.getState().relayout();
      useStudio.getState().requestFit();
    }
  };

  return (
    <header className="toolbar">
      <div className="brand">
        <svg width="22" height="22" viewBox="0 0 32 32" aria-hidden="true"><rect width="32" height="32" rx="7" fill="#2563eb" />
          <rect x="6" y="9" width="8" height="6" rx="1.5" fill="#fff" /><rect x="18" y="17" width="8" height="6" rx="1.5" fill="#fff" />
          <path d="M14 12h3v8h1" stroke="#fff" strokeWidth="2" fill="none" /></svg>
        <span>diagrama <strong>studio</strong></span>
      </div>
      <div className="toolbar__file">
        {path ? (
          <>
            <span className="toolbar__name" title={diagram?.description}>{diagram?.diagram || path}</span>
            <span className="muted small">{path}</span>
            {dirty ? <span className="pill pill--dirty">● unsaved</span> : <span className="pill pill--clean">saved</span>}
            {readOnly && <span className="pill pill--ro">read-only</span>}
            <button type="button" className={`pill ${c.errors ? 'pill--error' : c.warnings ? 'pill--warning' : 'pill--ok'}`}
              onClick={() => useStudio.getState().setPanelTab('problems')} title={`${c.errors} errors, ${c.warnings} warnings: show problems`}>
              {validating ? 'checking…' : c.errors ? `${c.errors} error${c.errors > 1 ? 's' : ''}` : c.warnings ? `${c.warnings} warning${c.warnings > 1 ? 's' : ''}` : 'valid'}
            </button>
            <PublishStatus />
          </>
        ) : <span className="muted">No diagram open</span>}
      </div>
      <div className="toolbar__actions">
        <button type="button" className="tool-btn" onClick={undo} disabled={!canUndo || readOnly} aria-label="Undo" title="Undo (Ctrl+Z)"><Icon name="undo" /></button>
        <button type="button" className="tool-btn" onClick={redo} disabled={!canRedo || readOnly} aria-label="Redo" title="Redo (Ctrl+Shift+Z)"><Icon name="redo" /></button>
        <span className="toolbar__sep" />
        <button type="button" className="tool-btn" onClick={autoLayout} disabled={!diagram || readOnly} title="Clear written positions and lay out automatically">
          <Icon name="layout" /><span>Auto-layout</span>
        </button>
        <button type="button" className="tool-btn" onClick={() => useStudio.getState().requestFit()} disabled={!diagram} aria-label="Fit to view" title="Fit to view (F)">
          <Icon name="fit" />
        </button>
        <button type="button" className={`tool-btn${paneOn ? ' is-on' : ''}`} onClick={() => useStudio.getState().setPaneOpen(!paneOn)}
          aria-pressed={paneOn} aria-label="YAML source" title="Show the YAML beside the canvas"><Icon name="code" /><span>YAML</span></button>
        <button type="button" className="tool-btn" onClick={() => useStudio.getState().setHistoryOpen(true)} disabled={!path}
          aria-label="Version history" title="Version history: the texts the studio saved"><Icon name="history" /></button>
        <button type="button" className="tool-btn" onClick={() => useStudio.getState().setTheme(NEXT_THEME[theme])}
          aria-label={`Theme: ${theme} (switch to ${NEXT_THEME[theme]})`} title={`Theme: ${theme === 'system' ? 'as the system' : theme}`}>
          <Icon name="moon" /></button>
        <button type="button" className="tool-btn" onClick={() => setHelp(true)} aria-label="Keyboard shortcuts" title="Keyboard shortcuts (?)"><Icon name="help" /></button>
        <span className="toolbar__sep" />
        <button type="button" className="tool-btn" onClick={() => useStudio.getState().setPanelTab('run')} disabled={!diagram} title="Run panel" aria-label="Open the run panel">
          <Icon name="play" /><span>Run</span>
        </button>
        <button type="button" className="btn btn--primary" onClick={() => void save()} disabled={(!diagram && !hasText) || readOnly || saving || !dirty}
          title={c.errors ? 'Save (Ctrl+S) — the diagram has problems' : 'Save (Ctrl+S)'}>
          <Icon name="save" /> {saving ? 'Saving…' : 'Save'}
        </button>
        <PublishButton />
      </div>
    </header>
  );
}
