import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RunData } from '../api/types';
import { createStudio } from './index';
import { format, keys, palette } from '../test/fixtures';
import { fakeServer, placedOrderAgent, session, type Request } from '../test/server';

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

function runData(status: string, events: number, count: number): RunData {
  return {
    run_id: 'r1', diagram: 'order_agent.yaml', status, errors: [], blocks: ['start'], links: [], failed: null, passes: {},
    steps: [], events: Array.from({ length: events }, (_, i) => ({ event: 'e', n: count - events + i })), count, variables: null,
    waiting: null, checkpointed: false, replay_of: null, session: null,
  };
}

describe('the runs slice', () => {
  it('starts a run offline (this server allows no other), follows it until it ends, then lists it', async () => {
    const polls: Request[] = [];
    const server = fakeServer({
      'POST /api/diagrams/order_agent.yaml/runs': () => ({ run_id: 'r1' }),
      // the run's events come in two reads: three while it runs, two more when it has finished
      'GET /api/runs/r1': (r) => { polls.push(r); return polls.length === 1 ? runData('running', 3, 3) : runData('succeeded', 2, 5); },
      'GET /api/diagrams/order_agent.yaml/runs': () => [{ run_id: 'r1', status: 'succeeded', started: 1747483200, duration_ms: 4, steps: 1, waiting: null }],
    });
    await studio.getState().startRun({ question: 'x' }, false);
    expect(server.requests[0].body).toEqual({ inputs: { question: 'x' }, offline: true });
    expect(studio.getState().panelTab).toBe('run');
    await vi.advanceTimersByTimeAsync(0);
    expect(studio.getState().run!.data!.status).toBe('running');
    await vi.advanceTimersByTimeAsync(300);
    await vi.waitFor(() => expect(studio.getState().run!.data!.status).toBe('succeeded'));
    expect(polls.map((r) => r.query.get('after'))).toEqual(['0', '3']);
    expect(studio.getState().run!.events).toHaveLength(5);
    await vi.waitFor(() => expect(studio.getState().runs.map((r) => r.run_id)).toEqual(['r1']));
    expect(studio.getState().toasts.at(-1)).toMatchObject({ message: 'run succeeded', kind: 'success' });
  });
  it('asks for an online run only where the server allows them', async () => {
    studio.setState({ session: { ...session, allow_online: true } });
    const server = fakeServer({ 'POST /api/diagrams/order_agent.yaml/runs': () => ({ run_id: 'r2' }) });
    await studio.getState().startRun({}, false);
    expect(server.requests[0].body).toEqual({ inputs: {}, offline: false });
  });
  it('says why a run did not start', async () => {
    fakeServer({});
    await studio.getState().startRun({}, true);
    expect(studio.getState().run).toBeNull();
    expect(studio.getState().toasts.at(-1)).toMatchObject({ message: 'run: not found', kind: 'error' });
  });
  it('stops following a run that is closed, and forgets runs when another diagram opens', async () => {
    const server = fakeServer({ 'GET /api/runs/r1': () => runData('running', 1, 1) });
    await studio.getState().openRun('r1');
    studio.getState().closeRun();
    await vi.advanceTimersByTimeAsync(1000);
    expect(server.requests).toHaveLength(0);
    studio.setState({ runs: [{ run_id: 'r1', status: 'succeeded', started: 1, duration_ms: 1, steps: 1, waiting: null }], scenarioResults: [] });
    studio.getState().forgetRuns();
    expect(studio.getState()).toMatchObject({ run: null, runs: [], scenarioResults: null });
  });
  it('saves the run as a scenario and runs the folder\'s scenarios', async () => {
    const server = fakeServer({
      'POST /api/runs/r1/scenario': () => ({ path: 'tests/order.scenario.yaml' }),
      'POST /api/scenarios/run': () => ({ results: [{ file: 'tests/order.scenario.yaml', name: 'order', passed: true, failures: [] }] }),
    });
    studio.setState({ run: { runId: 'r1', data: runData('succeeded', 0, 3), events: [] } });
    await studio.getState().saveScenario('tests/order.scenario.yaml');
    await studio.getState().runScenarios('tests');
    expect(server.requests.map((r) => r.body)).toEqual([{ path: 'tests/order.scenario.yaml' }, { folder: 'tests' }]);
    expect(studio.getState().scenarioResults!.map((r) => r.passed)).toEqual([true]);
    expect(studio.getState().scenariosRunning).toBe(false);
  });
});
