import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Block, RunData } from '../api/types';
import { createStudio } from './index';
import { memoryNames, messageInput, replyOf } from './chat';
import { format, keys, palette } from '../test/fixtures';
import { answer, fakeServer, session } from '../test/server';

const chatDiagram = () => ({
  diagram: 'chat',
  blocks: [
    { id: 'start', type: 'Start', memory: ['history', 'turns'], inputs: { style: 'short', message: 'Hello' },
      variables: { history: [], turns: 0 }, next: 'reply', position: [0, 0] as [number, number] },
    { id: 'reply', type: 'ClaudeRequest', with: { request: '{{ message }}' }, set: { answer: '{{ result }}' }, position: [300, 0] as [number, number] },
  ] as Block[],
});

let studio: ReturnType<typeof createStudio>;

beforeEach(() => {
  vi.useFakeTimers();
  studio = createStudio();
  const d = chatDiagram();
  studio.setState({ session, format, palette, links: keys, path: 'chat.yaml', hash: 'h1', diagram: d, saved: d });
});

afterEach(() => {
  vi.clearAllTimers();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

function runData(status: string, variables: Record<string, unknown> | null, count: number): RunData {
  return {
    run_id: 'r1', diagram: 'chat.yaml', status, errors: [], blocks: [], links: [], failed: null, passes: {}, steps: [],
    events: [], count, variables, waiting: null, checkpointed: true, replay_of: null, session: 's',
  };
}

describe('the chat slice', () => {
  it('reads what Start keeps and which input a message fills', () => {
    const d = chatDiagram();
    expect(memoryNames(d.blocks, palette)).toEqual(['history', 'turns']);
    expect(messageInput(d.blocks, palette)).toBe('message');
    const other = [{ ...d.blocks[0], memory: undefined, inputs: { question: '' } }];
    expect(memoryNames(other, palette)).toEqual([]);
    expect(messageInput(other, palette)).toBe('question');
    expect(replyOf({ result: { a: 1 } })).toBe('{"a":1}');
    expect(replyOf({ answer: 'hi', result: 'x' })).toBe('hi');
    expect(replyOf(null)).toBeNull();
  });
  it('sends a turn in its session, follows it to its answer, then shows the memory', async () => {
    const after: string[] = [];
    const server = fakeServer({
      'POST /api/diagrams/chat.yaml/chat': () => ({ run_id: 'r1' }),
      'GET /api/runs/r1': (r) => {
        after.push(r.query.get('after')!);
        return after.length === 1 ? runData('running', null, 2) : runData('succeeded', { answer: 'Hi Alice', turns: 1 }, 5);
      },
      'GET /api/sessions/studio-x': () => ({ session: 'studio-x', diagram: 'chat.yaml', turns: 1, memory: { history: [], turns: 1 },
        updated: 1, held_by: null }),
      'GET /api/diagrams/chat.yaml/runs': () => [],
    });
    studio.setState({ chatSession: 'studio-x' });
    const sent = studio.getState().sendChat("I'm Alice");
    await vi.advanceTimersByTimeAsync(300);
    await sent;
    expect(server.requests[0].body).toEqual({ session: 'studio-x', inputs: { message: "I'm Alice" }, offline: true });
    expect(after).toEqual(['0', '2']);
    expect(studio.getState().chatTurns).toEqual([{ message: "I'm Alice", runId: 'r1', status: 'succeeded', reply: 'Hi Alice', error: null }]);
    expect(studio.getState().chatMemory!.memory).toEqual({ history: [], turns: 1 });
    expect(studio.getState().chatting).toBe(false);
    studio.getState().newChatSession();
    expect(studio.getState().chatSession).toMatch(/^studio-/);
    expect(studio.getState().chatSession).not.toBe('studio-x');
    expect(studio.getState()).toMatchObject({ chatTurns: [], chatMemory: null });
  });
  it("shows why a turn did not answer: the run's error, or the request's", async () => {
    fakeServer({
      'POST /api/diagrams/chat.yaml/chat': () => ({ run_id: 'r1' }),
      'GET /api/runs/r1': () => ({ ...runData('failed', {}, 3), errors: [{ block: 'reply', type: 'provider_error', message: 'boom', ignored: false, handled_by: null }] }),
      'GET /api/sessions/studio-y': () => answer(404, { error: 'no session' }),
    });
    studio.setState({ chatSession: 'studio-y' });
    await studio.getState().sendChat('hi');
    expect(studio.getState().chatTurns[0]).toMatchObject({ status: 'failed', reply: null, error: 'provider_error: boom' });
    fakeServer({ 'POST /api/diagrams/chat.yaml/chat': () => answer(422, { error: 'chat.yaml keeps no memory' }) });
    await studio.getState().sendChat('again');
    expect(studio.getState().chatTurns[1]).toMatchObject({ status: 'failed', error: 'chat.yaml keeps no memory' });
  });
  it('a new session while a turn runs drops that turn', async () => {
    fakeServer({
      'POST /api/diagrams/chat.yaml/chat': () => ({ run_id: 'r1' }),
      'GET /api/runs/r1': () => runData('running', null, 1),
    });
    const sent = studio.getState().sendChat('hi');
    await vi.advanceTimersByTimeAsync(0);
    studio.getState().newChatSession();
    await vi.advanceTimersByTimeAsync(300);
    await sent;
    expect(studio.getState()).toMatchObject({ chatTurns: [], chatting: false });
  });
});
