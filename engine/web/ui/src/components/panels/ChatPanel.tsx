/** Talk to a diagram whose Start keeps `memory`: a message is one turn (a run of the saved file in this page's
 * session, offline unless the server allows online and the Run tab's switch says so), its answer shown below it,
 * and the session's memory after the turn; "New session" starts from Start's own values again. */
import { useMemo } from 'react';
import { isDirty, useStudio } from '../../store';
import { memoryNames, messageInput } from '../../store/chat';
import { useKeptState } from '../keptState';

export function ChatPanel() {
  const saved = useStudio((s) => s.saved);
  const diagram = useStudio((s) => s.diagram);
  const palette = useStudio((s) => s.palette);
  const turns = useStudio((s) => s.chatTurns);
  const memory = useStudio((s) => s.chatMemory);
  const chatting = useStudio((s) => s.chatting);
  const sessionId = useStudio((s) => s.chatSession);
  const dirty = useStudio(isDirty);
  const blocks = (saved ?? diagram)?.blocks ?? [];
  const names = useMemo(() => memoryNames(blocks, palette), [blocks, palette]);
  const input = useMemo(() => messageInput(blocks, palette), [blocks, palette]);
  const path = useStudio((s) => s.path);
  const [text, setText] = useKeptState(`chat-message:${path}`, () => '');

  const send = () => {
    if (!text.trim() || chatting) return;
    void useStudio.getState().sendChat(text);
    setText('');
  };
  return (
    <div className="chat-panel">
      <section className="section">
        <div className="run-status">
          <h3>Chat</h3>
          <span className="muted small">session {sessionId}</span>
          <span className="field__spacer" />
          <button type="button" className="btn" disabled={chatting} onClick={() => useStudio.getState().newChatSession()}>New session</button>
        </div>
        {dirty && <div className="note note--warning">Turns run the saved file: your unsaved edits are not part of it.</div>}
        {!input && <div className="muted small">The Start block declares no input for the message: each turn runs with none.</div>}
        <ol className="chat-turns" aria-label="Conversation">
          {turns.map((t, i) => (
            <li key={i} className={`chat-turn chat-turn--${t.status}`}>
              <div className="chat-turn__you"><span className="muted small">you</span> {t.message}</div>
              <div className="chat-turn__robot" data-testid="chat-reply">
                {t.status === 'sending' || t.status === 'running' ? <span className="muted">…</span>
                  : t.reply ?? <span className="muted">(no answer variable)</span>}
              </div>
              {t.error && <div className="note note--error small" role="alert">{t.error}</div>}
            </li>
          ))}
        </ol>
        <form onSubmit={(e) => { e.preventDefault(); send(); }}>
          <div className="field">
            <label className="field__label" htmlFor="chat-message">{input ? `Message (${input})` : 'Message'}</label>
            <textarea id="chat-message" data-testid="chat-message" rows={2} value={text} onChange={(e) => setText(e.target.value)}
              onKeyDown={(e) => { if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); send(); } }} />
          </div>
          <div className="run-panel__actions">
            <span className="field__spacer" />
            <button type="submit" className="btn btn--primary" disabled={chatting || !text.trim()}>{chatting ? 'Answering…' : 'Send'}</button>
          </div>
        </form>
      </section>
      <section className="section">
        <h3>Memory</h3>
        {!memory ? <div className="muted small">Kept after each turn: {names.join(', ')}.</div> : (
          <table className="grid run-result__vars" aria-label="Memory">
            <caption className="muted small">after turn {memory.turns}</caption>
            <tbody>
              {names.map((k) => (
                <tr key={k}><th scope="row"><code>{k}</code></th>
                  <td><pre className="run-result__value">{JSON.stringify(memory.memory[k] ?? null, null, 1)}</pre></td></tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}
