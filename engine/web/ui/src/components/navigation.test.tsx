import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import type { RunData } from '../api/types';
import { createStudio } from '../store';
import { shownRun } from '../store/nav';
import { basics, diagramFile, fakeServer, placedOrderAgent } from '../test/server';
import { ValueView } from './panels/Records';

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe('drilling into a Subdiagram', () => {
  it('opens the child, keeps the trail and the run (by the child ids), and goes back by a crumb', async () => {
    const parent = diagramFile('triage.yaml');
    parent.compiled = { ...parent.compiled, subdiagrams: { ask: { written: 'child.yaml', file: 'sub/child.yaml' } } };
    fakeServer({
      ...basics(),
      'GET /api/diagrams': () => [],
      'GET /api/diagrams/triage.yaml': () => parent,
      'GET /api/diagrams/sub/child.yaml': () => diagramFile('sub/child.yaml', placedOrderAgent(), 'h2'),
      'GET /api/diagrams/triage.yaml/runs': () => [],
      'GET /api/diagrams/sub/child.yaml/runs': () => [],
    });
    const studio = createStudio();
    await studio.getState().init();
    await studio.getState().open('triage.yaml');
    const run = { run_id: 'r1', diagram: 'triage.yaml', status: 'succeeded', errors: [], blocks: ['start', 'ask'], links: [],
      failed: null, passes: {}, events: [], count: 3, variables: null,
      steps: [{ block: 'ask', next: null, status: 'succeeded' }, { block: 'ask/lookup', next: 'ask/reply', status: 'succeeded' },
        { block: 'ask/reply', next: null, status: 'succeeded' }] } as unknown as RunData;
    studio.setState({ run: { runId: 'r1', data: run, events: [] } });

    await studio.getState().drill('ask');
    let s = studio.getState();
    expect(s.path).toBe('sub/child.yaml');
    expect(s.crumbs).toEqual([{ path: 'triage.yaml', block: 'ask' }]);
    expect(shownRun(s)?.steps.map((x) => x.block)).toEqual(['lookup', 'reply']);
    expect(shownRun(s)?.links).toEqual([['lookup', 'reply']]);

    await studio.getState().crumbTo(0);
    s = studio.getState();
    expect(s.path).toBe('triage.yaml');
    expect(s.crumbs).toEqual([]);
    expect(s.selection).toEqual(['ask']);
    expect(shownRun(s)).toBe(run);
  });

  it('does nothing for a block that runs no file of the folder', async () => {
    fakeServer({ ...basics(), 'GET /api/diagrams': () => [], 'GET /api/diagrams/a.yaml': () => diagramFile('a.yaml'),
      'GET /api/diagrams/a.yaml/runs': () => [] });
    const studio = createStudio();
    await studio.getState().init();
    await studio.getState().open('a.yaml');
    await studio.getState().drill('lookup');
    expect(studio.getState().path).toBe('a.yaml');
  });
});

describe('chat sessions', () => {
  it('lists the stored sessions and reopens one with its turns', async () => {
    fakeServer({
      ...basics(),
      'GET /api/diagrams/chat.yaml/sessions': () => [{ session: 'studio-1', turns: 2, updated: 1, held_by: null, memory: { turns: 2 },
        runs: [{ run_id: 'a', status: 'succeeded', started: 1, message: 'hi', reply: 'hello' },
          { run_id: 'b', status: 'succeeded', started: 2, message: 'again', reply: null }] }],
    });
    const studio = createStudio();
    studio.setState({ path: 'chat.yaml' });
    await studio.getState().loadSessions();
    studio.getState().reopenSession('studio-1');
    const s = studio.getState();
    expect(s.chatSession).toBe('studio-1');
    expect(s.chatTurns.map((t) => [t.message, t.reply])).toEqual([['hi', 'hello'], ['again', null]]);
    expect(s.chatMemory?.memory).toEqual({ turns: 2 });
  });
});

describe('data as tables', () => {
  it('draws a list of records as a table, with a switch to its JSON', () => {
    render(<ValueView label="history" value={[{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }]} />);
    const table = screen.getByRole('table', { name: 'history' });
    expect([...table.querySelectorAll('th')].map((th) => th.textContent)).toEqual(['#', 'role', 'content']);
    expect(table.querySelectorAll('tbody tr')).toHaveLength(2);
    fireEvent.click(screen.getByRole('button', { name: 'history: show as JSON' }));
    expect(screen.queryByRole('table')).toBeNull();
    expect(document.querySelector('pre')!.textContent).toContain('"assistant"');
  });

  it('keeps any other value as JSON', () => {
    render(<ValueView label="n" value={{ a: 1 }} />);
    expect(screen.queryByRole('table')).toBeNull();
  });
});
