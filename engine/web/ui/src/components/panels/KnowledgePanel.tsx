/** The Knowledge tab, a retrieval test as Dify's: the open diagram's knowledge bases (folder, files, passages, when
 * indexed), a query searched as its Retrieve block searches (the passages and their scores), and a re-index. */
import { type FormEvent, useCallback, useEffect, useState } from 'react';
import { api } from '../../api/client';
import type { KnowledgeListed, KnowledgeSearch } from '../../api/types';
import { indexedText } from '../../model/knowledge';
import { useStudio } from '../../store';
import { Passages } from './Passages';

export function KnowledgePanel() {
  const path = useStudio((s) => s.path);
  if (!path) return <div className="empty-state"><strong>No diagram open.</strong></div>;
  return <DiagramKnowledge key={path} path={path} />;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

function DiagramKnowledge({ path }: { path: string }) {
  const [bases, setBases] = useState<KnowledgeListed[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [picked, setPicked] = useState<string>('');
  const [query, setQuery] = useState('');
  const [topK, setTopK] = useState(5);
  const [found, setFound] = useState<KnowledgeSearch | null>(null);
  const [busy, setBusy] = useState<'search' | 'index' | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const readOnly = useStudio((s) => !!s.session?.read_only);

  const load = useCallback(async () => {
    try {
      const listed = await api.knowledge(path);
      setBases(listed);
      setPicked((p) => (listed.some((b) => b.name === p) ? p : listed[0]?.name ?? ''));
      setError(null);
    } catch (e) {
      setError(message(e));
    }
  }, [path]);

  useEffect(() => { void load(); }, [load]);

  const search = async (e: FormEvent) => {
    e.preventDefault();
    if (!picked || !query.trim()) return;
    setBusy('search');
    setNote(null);
    try {
      setFound(await api.searchKnowledge(path, picked, query, topK));
      void load(); // the first search indexes the base: its counts change
    } catch (err) {
      setNote(message(err));
    } finally {
      setBusy(null);
    }
  };

  const reindex = async () => {
    setBusy('index');
    setNote(null);
    try {
      const done = await api.indexKnowledge(path, picked);
      setNote(`${done.knowledge}: ${done.files} files (${done.added} added, ${done.changed} changed, ${done.removed} removed, `
        + `${done.unchanged} unchanged) · ${done.chunks} passages · ${done.seconds.toFixed(2)} s`
        + (done.failed.length ? ` · unreadable: ${done.failed.join('; ')}` : ''));
      await load();
    } catch (err) {
      setNote(message(err));
    } finally {
      setBusy(null);
    }
  };

  if (error) return <div className="note note--error" role="alert">Cannot read the knowledge bases: {error}</div>;
  if (bases === null) return <div className="empty-state muted small">Reading the knowledge bases…</div>;
  if (bases.length === 0) {
    return (
      <div className="empty-state">
        <strong>This diagram declares no knowledge base.</strong>
        <div className="muted small">Declare one under <code>knowledge:</code> (a folder of documents); a Retrieve block searches it.</div>
      </div>
    );
  }
  return (
    <div className="knowledge-panel">
      <section className="section">
        <h3>Knowledge bases</h3>
        <table className="grid knowledge-table" aria-label="Knowledge bases">
          <thead><tr><th scope="col">Name</th><th scope="col">Folder</th><th scope="col">Files</th><th scope="col">Passages</th>
            <th scope="col">Index</th></tr></thead>
          <tbody>
            {bases.map((b) => (
              <tr key={b.name} className={b.name === picked ? 'is-picked' : ''} onClick={() => setPicked(b.name)}>
                <td><code>{b.name}</code></td>
                <td title={`declared in ${b.declared_in} · ${b.include.join(', ')} · chunks of ${b.chunk_size} (overlap ${b.chunk_overlap})`}>
                  <code>{b.folder}</code></td>
                <td className="num">{b.files}</td>
                <td className="num">{b.chunks}</td>
                <td className="muted small">{indexedText(b.indexed)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section className="section">
        <h3>Retrieval test <span className="muted small">searched as the Retrieve block searches</span></h3>
        <form className="knowledge-search" onSubmit={(e) => void search(e)}>
          {bases.length > 1 && (
            <select aria-label="Knowledge base" value={picked} onChange={(e) => setPicked(e.target.value)}>
              {bases.map((b) => <option key={b.name} value={b.name}>{b.name}</option>)}
            </select>
          )}
          <input type="search" aria-label="Query" placeholder="Type what a user would ask…" value={query}
            onChange={(e) => setQuery(e.target.value)} />
          <label className="small">top <input type="number" aria-label="Passages at most" min={1} max={50} value={topK}
            onChange={(e) => setTopK(Math.min(50, Math.max(1, Number(e.target.value) || 1)))} /></label>
          <button type="submit" className="btn btn--primary" disabled={!query.trim() || busy !== null}>
            {busy === 'search' ? 'Searching…' : 'Search'}</button>
          <button type="button" className="btn" disabled={busy !== null || readOnly} onClick={() => void reindex()}
            title={readOnly ? 'the studio was started with --read-only' : 'read the changed files again and embed them'}>
            {busy === 'index' ? 'Indexing…' : 'Re-index'}</button>
        </form>
        {note && <div className="note small" role="status">{note}</div>}
        {found && (
          <div className="knowledge-found">
            <div className="muted small">{found.passages.length} passage{found.passages.length === 1 ? '' : 's'} from
              <code> {found.knowledge}</code> for “{found.query}” · {found.took_ms.toFixed(1)} ms</div>
            <Passages passages={found.passages} label="Passages found" />
          </div>
        )}
      </section>
    </div>
  );
}
