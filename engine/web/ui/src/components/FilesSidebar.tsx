/**
 * The project folder: its diagrams as a tree of subfolders (open, new, duplicate, rename, delete) and its scenario
 * files, each runnable from the list.
 */
import type { DiagramSummary } from '../api/types';
import { isDirty, useStudio } from '../store';
import { plural } from '../model/plural';
import { Icon } from './Icon';

function suggestName(path: string, taken: string[], suffix: string): string {
  const stem = path.replace(/\.ya?ml$/, '');
  for (let n = 1; ; n++) {
    const p = `${stem}${suffix}${n === 1 ? '' : `_${n}`}.yaml`;
    if (!taken.includes(p)) return p;
  }
}

function withYaml(p: string): string {
  const t = p.trim();
  return /\.ya?ml$/.test(t) ? t : `${t}.yaml`;
}

export function FilesSidebar() {
  const files = useStudio((s) => s.files);
  const current = useStudio((s) => s.path);
  const dirty = useStudio(isDirty);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const root = useStudio((s) => s.session?.root);
  const { setDialog, open, createFile, renameFile, deleteFile } = useStudio.getState();
  const taken = files.map((f) => f.path);

  const scenarios = useStudio((s) => s.scenarioFiles);
  const scenariosRunning = useStudio((s) => s.scenariosRunning);
  const openFile = (path: string) => {
    if (path === current) return;
    // unsaved edits are kept as a draft of their file, offered back when it opens again
    if (dirty) useStudio.getState().toast(`unsaved edits of ${current} are kept as a draft`, 'info');
    void open(path);
  };
  const folders = new Map<string, DiagramSummary[]>();
  for (const f of files) {
    const folder = f.path.includes('/') ? f.path.slice(0, f.path.lastIndexOf('/')) : '';
    folders.set(folder, [...(folders.get(folder) ?? []), f]);
  }
  const item = (f: DiagramSummary) => {
    const active = f.path === current;
    return (
      <li key={f.path} className={`file${active ? ' is-active' : ''}`}>
        <button type="button" className="file__open" aria-current={active ? 'true' : undefined} onClick={() => openFile(f.path)}
          title={f.description}>
          <span className="file__name">
            {f.name || f.path}
            {active && dirty && <span className="dirty-dot" role="img" aria-label="unsaved edits" title="unsaved edits">●</span>}
          </span>
          <span className="file__meta">
            <span className={`valid-dot ${f.valid ? 'is-valid' : 'is-invalid'}`} role="img" aria-label={f.valid ? 'valid' : 'has problems'} />
            {f.path.split('/').pop()} · {plural(f.blocks, 'block')}
          </span>
        </button>
        <div className="file__actions">
          <button type="button" className="icon-btn" aria-label={`Duplicate ${f.path}`} title="Duplicate" disabled={readOnly}
            onClick={() => setDialog({ title: `Duplicate ${f.path}`, input: { label: 'New file name', value: suggestName(f.path.split('/').pop()!, taken, '_copy') },
              confirm: 'Duplicate', onConfirm: (v) => createFile(withYaml(v), f.path) })}><Icon name="copy" size={14} /></button>
          <button type="button" className="icon-btn" aria-label={`Rename ${f.path}`} title="Rename" disabled={readOnly}
            onClick={() => setDialog({ title: `Rename ${f.path}`, input: { label: 'New file name', value: f.path }, confirm: 'Rename',
              onConfirm: (v) => renameFile(f.path, withYaml(v)) })}><Icon name="edit" size={14} /></button>
          <button type="button" className="icon-btn icon-btn--danger" aria-label={`Delete ${f.path}`} title="Delete" disabled={readOnly}
            onClick={() => setDialog({ title: `Delete ${f.path}?`, message: 'The file is removed from disk. This cannot be undone here.',
              confirm: 'Delete', danger: true, onConfirm: () => deleteFile(f.path) })}><Icon name="trash" size={14} /></button>
        </div>
      </li>
    );
  };

  return (
    <section className="files" aria-label="Diagrams">
      <div className="sidebar__head">
        <h2 title={root ? `folder: ${root}` : undefined}>Diagrams</h2>
        <span className="field__spacer" />
        <button type="button" className="btn btn--small" disabled={readOnly} onClick={() => setDialog({
          title: 'New diagram', message: 'A new diagram starts with a Start block.',
          input: { label: 'File name', value: suggestName('new_diagram', taken, '') }, confirm: 'Create',
          onConfirm: (v) => createFile(withYaml(v)),
        })}>+ New</button>
        <button type="button" className="btn btn--small" disabled={readOnly} title="New from example: a copy of one of the README's examples"
          onClick={() => useStudio.getState().setGalleryOpen(true)}>From example</button>
      </div>
      <ul className="files__list" aria-label="Diagram files">
        {(folders.get('') ?? []).map(item)}
        {[...folders].filter(([folder]) => folder).map(([folder, inside]) => (
          <li key={folder} className="files__folder-item">
            <details className="files__folder" open={!!current?.startsWith(`${folder}/`) || folders.size <= 4}>
              <summary>{folder}/</summary>
              <ul aria-label={`${folder} files`}>{inside.map(item)}</ul>
            </details>
          </li>
        ))}
      </ul>
      {scenarios.length > 0 && (
        <details className="files__folder files__scenarios">
          <summary>Scenarios ({scenarios.length})</summary>
          <ul aria-label="Scenario files">
            {scenarios.map((path) => (
              <li key={path} className="scenario-file">
                <span className="scenario-file__name" title={path}>{path}</span>
                <button type="button" className="icon-btn" aria-label={`Run scenario ${path}`} title="Run this scenario file"
                  disabled={scenariosRunning} onClick={() => void useStudio.getState().runScenarios('.', path)}><Icon name="play" size={14} /></button>
              </li>
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}
