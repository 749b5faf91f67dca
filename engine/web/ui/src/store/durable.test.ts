import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RunData, Waiting } from '../api/types';
import { createStudio, replayOff } from './index';
import { format, keys, palette } from '../test/fixtures';
import { answer, fakeServer, placedOrderAgent, session } from '../test/server';

let studio: ReturnType<typeof createStudio>;

beforeEach(() => {
  vi.useFakeTimers();
  studio = createStudio();
  const d = placedOrderAgent();
  studio.setState({ session, format, palette, links: keys, path: 'order_agent.yaml', hash: 'h1', diagram: d, saved: d });
});

afterEach(() => {
  vi.clearAllTimers();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

const waiting: Waiting = { block: 'approve', prompt: 'Send it?', form: { type: 'object', properties: { approved: { type: 'boolean' } } },
  timeout: null, asked_at: 1 };

function runData(runId: string, status: string, extra: Partial<RunData> = {}): RunData {
  return {
    run_id: runId, diagram: 'order_agent.yaml', status, errors: [], blocks: ['start', 'ask'], links: [], failed: null, passes: {},
    steps: [], events: [], count: 3, variables: null, waiting: null, checkpointed: true, replay_of: null, session: null, ...extra,
  };
}

describe('durable runs in the runs slice', () => {
  it("shows what is wrong with an answer to a Wait, and the run is not followed again", async () => {
    const server = fakeServer({
      'POST /api/runs/r1/resume': () => answer(422, { error: 'does not fit; still waiting', problems: ["approved: 'yes' is not of type 'boolean'"] }),
    });
    studio.setState({ run: { runId: 'r1', data: runData('r1', 'waiting', { waiting }), events: [] } });
    await studio.getState().answerWait({ approved: 'yes' });
    expect(server.requests[0].body).toEqual({ answer: { approved: 'yes' }, offline: true });
    expect(studio.getState().answerProblems).toEqual(["approved: 'yes' is not of type 'boolean'"]);
    expect(studio.getState().run!.data!.status).toBe('waiting');
  });
  it('follows the same run once its answer is taken, from its first event', async () => {
    const polls: string[] = [];
    fakeServer({
      'POST /api/runs/r1/resume': () => ({ run_id: 'r1' }),
      'GET /api/runs/r1': (r) => { polls.push(r.query.get('after')!); return runData('r1', 'succeeded'); },
      'GET /api/diagrams/order_agent.yaml/runs': () => [],
    });
    studio.setState({ run: { runId: 'r1', data: runData('r1', 'waiting', { waiting }), events: [] }, answerProblems: ['old'] });
    await studio.getState().answerWait({ approved: true });
    expect(studio.getState().answerProblems).toBeNull();
    await vi.advanceTimersByTimeAsync(0);
    await vi.waitFor(() => expect(studio.getState().run!.data!.status).toBe('succeeded'));
    expect(polls).toEqual(['0']);
  });
  it('resumes an interrupted run with no answer, and asks online only where the server allows it', async () => {
    studio.setState({ session: { ...session, allow_online: true }, offline: false,
      run: { runId: 'r1', data: runData('r1', 'interrupted'), events: [] } });
    const server = fakeServer({ 'POST /api/runs/r1/resume': () => ({ run_id: 'r1' }) });
    await studio.getState().answerWait();
    expect(server.requests[0].body).toEqual({ offline: false });
  });
  it('replays the shown run from a block as a new run, and follows that one', async () => {
    const server = fakeServer({
      'POST /api/runs/r1/replay': () => ({ run_id: 'r2' }),
      'GET /api/runs/r2': () => runData('r2', 'succeeded', { replay_of: 'r1' }),
      'GET /api/diagrams/order_agent.yaml/runs': () => [],
    });
    studio.setState({ run: { runId: 'r1', data: runData('r1', 'failed'), events: [] } });
    await studio.getState().replayFrom('ask');
    expect(server.requests[0].body).toEqual({ block: 'ask', offline: true });
    expect(studio.getState().run!.runId).toBe('r2');
    await vi.advanceTimersByTimeAsync(0);
    await vi.waitFor(() => expect(studio.getState().run!.data!.replay_of).toBe('r1'));
  });
  it('says why a replay did not start', async () => {
    fakeServer({ 'POST /api/runs/r1/replay': () => answer(409, { error: "run 'r1' never reached block 'done'" }) });
    studio.setState({ run: { runId: 'r1', data: runData('r1', 'failed'), events: [] } });
    await studio.getState().replayFrom('done');
    expect(studio.getState().run!.runId).toBe('r1');
    expect(studio.getState().toasts.at(-1)).toMatchObject({ message: "run from done: run 'r1' never reached block 'done'", kind: 'error' });
  });
  it('offers "run from here" only on a block a shown, finished, durable run reached', () => {
    const shown = (data: RunData | null) => ({ runId: 'r1', data, events: [] });
    expect(replayOff(null, 'ask')).toMatch(/open a past run/);
    expect(replayOff(shown(runData('r1', 'running')), 'ask')).toMatch(/still going/);
    expect(replayOff(shown(runData('r1', 'succeeded', { checkpointed: false })), 'ask')).toMatch(/no checkpoints/);
    expect(replayOff(shown(runData('r1', 'succeeded')), 'done')).toBe('this run never reached done');
    expect(replayOff(shown(runData('r1', 'succeeded')), 'ask')).toBeNull();
  });
});
