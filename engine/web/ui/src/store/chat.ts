/**
 * The chat slice: a conversation with a diagram whose Start keeps `memory` (Start's `memory: [history, ...]`).
 * Each message is one run of the saved diagram in this page's session (`POST /api/diagrams/{path}/chat`), offline
 * unless the server allows online and the page asks; the turn is followed until it ends, then its answer is shown
 * and the session's memory read back. A new session starts from Start's own values again.
 */
import type { StateCreator } from 'zustand';
import { api } from '../api/client';
import type { Block, BlockType, ChatSession, RunData } from '../api/types';
import type { StudioState } from './index';

export interface ChatTurn {
  message: string;
  runId: string | null;
  /** `sending` until the run has an id, then the run's status */
  status: string;
  /** the robot's answer (its `answer` variable, or the first of reply, response, result) */
  reply: string | null;
  /** why the turn did not answer: the run's errors, or the request's */
  error: string | null;
}

export interface ChatSlice {
  chatSession: string;
  chatTurns: ChatTurn[];
  /** the session's memory after the last turn (null before the first) */
  chatMemory: ChatSession | null;
  chatting: boolean;
  sendChat: (message: string) => Promise<void>;
  newChatSession: () => void;
}

const POLL_MS = 300;
const REPLY_NAMES = ['answer', 'reply', 'response', 'result'];

export function newSessionId(): string {
  const random = globalThis.crypto?.randomUUID?.().slice(0, 8) ?? Math.random().toString(36).slice(2, 10);
  return `studio-${random}`;
}

/** The variables Start's `memory` names ([] when it keeps none: no chat for that diagram). */
export function memoryNames(blocks: Block[], palette: BlockType[]): string[] {
  const starts = new Set(palette.filter((t) => t.is_start).map((t) => t.type));
  const memory = blocks.find((b) => starts.has(b.type))?.memory;
  return Array.isArray(memory) ? memory.filter((m): m is string => typeof m === 'string') : [];
}

/** The Start input a chat message fills: `message` when Start declares it, else its first input. */
export function messageInput(blocks: Block[], palette: BlockType[]): string | null {
  const starts = new Set(palette.filter((t) => t.is_start).map((t) => t.type));
  const inputs = blocks.find((b) => starts.has(b.type))?.inputs;
  const names = inputs && typeof inputs === 'object' ? Object.keys(inputs) : [];
  return names.includes('message') ? 'message' : (names[0] ?? null);
}

/** The robot's answer in a finished turn's variables. */
export function replyOf(variables: RunData['variables']): string | null {
  const name = REPLY_NAMES.find((n) => variables && variables[n] !== undefined && variables[n] !== null);
  if (!name || !variables) return null;
  const value = variables[name];
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const createChatSlice: StateCreator<StudioState, [], [], ChatSlice> = (set, get) => {
  /** Changes the turn at `index` of `session`, unless a new session has begun since. */
  function update(session: string, index: number, change: Partial<ChatTurn>) {
    if (get().chatSession !== session) return;
    set({ chatTurns: get().chatTurns.map((t, i) => (i === index ? { ...t, ...change } : t)) });
  }

  return {
    chatSession: newSessionId(),
    chatTurns: [],
    chatMemory: null,
    chatting: false,

    async sendChat(text) {
      const { path, saved, diagram, palette, chatSession: session, session: server } = get();
      const input = messageInput((saved ?? diagram)?.blocks ?? [], palette);
      if (!path || get().chatting) return;
      const index = get().chatTurns.length;
      set({ chatting: true, chatTurns: [...get().chatTurns, { message: text, runId: null, status: 'sending', reply: null, error: null }] });
      try {
        const offline = !server?.allow_online || get().offline;
        const { run_id: runId } = await api.chat(path, session, input ? { [input]: text } : {}, offline);
        update(session, index, { runId, status: 'running' });
        let data = await api.run(runId, 0);
        while (data.status === 'running') {
          await sleep(POLL_MS);
          if (get().chatSession !== session) return;
          data = await api.run(runId, data.count);
        }
        const errors = data.errors.filter((e) => !e.ignored && !e.handled_by).map((e) => `${e.type}: ${e.message}`);
        update(session, index, {
          status: data.status, reply: replyOf(data.variables),
          error: data.status === 'waiting' ? `waiting at ${data.waiting?.block ?? 'a Wait'}: answer it in the Run tab`
            : errors.length ? errors.join('; ') : null,
        });
        const memory = await api.chatSession(session).catch(() => null);
        if (get().chatSession === session && memory) set({ chatMemory: memory });
      } catch (e) {
        update(session, index, { status: 'failed', error: message(e) });
      } finally {
        if (get().chatSession === session) set({ chatting: false });
        void get().loadRuns();
      }
    },

    newChatSession() {
      set({ chatSession: newSessionId(), chatTurns: [], chatMemory: null, chatting: false });
    },
  };
};
