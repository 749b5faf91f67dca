/** Talk to a diagram whose Start keeps `memory`: a message is one turn (a run of the saved file in this page's
 * session, offline unless the server allows online and the Run tab's switch says so), its answer shown below it,
 * and the session's memory after the turn; "New session" starts from Start's own values again. */
import { useEffect, useMemo } from 'react';
import { isDirty, useStudio } from '../../store';
import { memoryNames, messageInput } from '../../store/chat';
import { lastSession, rememberSession } from '../../store/nav';
import { startedText } from '../../model/run';
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
  const sessions = useStudio((s) => s.sessions);
  const last = lastSession(path);
  // the stored sessions, read again once a turn ends; the session a turn was sent in is offered after a reload
  useEffect(() => {
    if (!chatting) void useStudio.getState().loadSessions();
  }, [path, chatting]);
  useEffect(() => {
    if (turns.length) rememberSession(path, sessionId);
  }, [path, sessionId, turns.length]);
  const offered = !turns.length && last && last !== sessionId ? sessions?.find((s) => s.session === last) : undefined;

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
        {offered && (
          <div className="note chat-offer" data-testid="chat-offer">
            Your last session, <code>{offered.session}</code> ({offered.turns} turn{offered.turns === 1 ? '' : 's'}).{' '}
            <button type="button" className="btn" onClick={() => useStudio.getState().reopenSession(offered.session)}>Continue it</button>
          </div>
        )}
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
        <h3>Sessions</h3>
        {!sessions?.length ? <div className="muted small">No stored session of this diagram yet.</div> : (
          <ul className="chat-sessions" aria-label="Sessions">
            {sessions.map((s) => (
              <li key={s.session} className={s.session === sessionId ? 'is-current' : undefined}>
                <span><code>{s.session}</code> <span className="muted small">{s.turns} turn{s.turns === 1 ? '' : 's'} · {startedText(s.updated)}{s.session === last ? ' · last used here' : ''}</span></span>
                <span className="field__spacer" />
                <button type="button" className="btn btn--small" disabled={chatting || s.session === sessionId}
                  aria-label={`Reopen ${s.session}`} onClick={() => useStudio.getState().reopenSession(s.session)}>Reopen</button>
                <button type="button" className="btn btn--small btn--danger" disabled={chatting || !!s.held_by}
                  aria-label={`Forget ${s.session}`} onClick={() => useStudio.getState().setDialog({
                    title: `Forget session ${s.session}?`, message: 'Its memory is deleted from the store; its runs stay.',
                    confirm: 'Forget', danger: true, onConfirm: () => useStudio.getState().forgetSession(s.session),
                  })}>Forget</button>
              </li>
            ))}
          </ul>
        )}
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
