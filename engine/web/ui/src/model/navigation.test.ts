import { describe, expect, it } from 'vitest';
import type { Block, RunData, Step } from '../api/types';
import { searchBlocks, searchIndex, stepMatch } from './blockSearch';
import { childRun, crumbBack, crumbTexts, drillInto, runAddress } from './drill';
import { asRecords, cellText } from './records';
import { compareRuns, diffPaths, diffVariables, filterQuery, filtering, NO_FILTER } from './runSearch';

const blocks = [
  { id: 'start', type: 'Start', next: 'ask' },
  { id: 'ask', type: 'ClaudeRequest', label: 'Ask the model', with: { request: 'Where is order {{ order_id }}?' } },
  { id: 'task_runner', type: 'Set', set: { note: 'asks nobody' } },
  { id: 'ask_again', type: 'ClaudeRequest', with: { request: 'again' } },
] as Block[];

describe('finding a block', () => {
  it('matches id, label, type and property text, the id first', () => {
    const found = searchBlocks(searchIndex(blocks), 'ask');
    expect(found.map((m) => m.id)).toEqual(['ask', 'ask_again', 'task_runner', 'start']); // start: its next names ask
    expect(found[2]).toMatchObject({ matchedIn: 'id' });
    expect(searchBlocks(searchIndex(blocks), 'model')[0]).toMatchObject({ id: 'ask', matchedIn: 'label' });
    expect(searchBlocks(searchIndex(blocks), 'claude').map((m) => m.id)).toEqual(['ask', 'ask_again']);
    const text = searchBlocks(searchIndex(blocks), 'nobody')[0];
    expect(text).toMatchObject({ id: 'task_runner', matchedIn: 'property', field: 'set.note' });
    expect(text.snippet).toContain('asks nobody');
  });

  it('needs every word, ignores case, and finds nothing for an empty query', () => {
    expect(searchBlocks(searchIndex(blocks), 'ORDER claude').map((m) => m.id)).toEqual(['ask']);
    expect(searchBlocks(searchIndex(blocks), '   ')).toEqual([]);
    expect(searchBlocks(searchIndex(blocks), 'zebra')).toEqual([]);
  });

  it('indexes a diagram once and stays fast on 300 blocks', () => {
    const many = Array.from({ length: 300 }, (_, i) => ({ id: `b${i}`, type: 'Set', set: { n: `{{ n + ${i} }}` } })) as Block[];
    expect(searchIndex(many)).toBe(searchIndex(many));
    const started = performance.now();
    for (let i = 0; i < 20; i++) searchBlocks(searchIndex(many), `b2${i % 10}`);
    expect((performance.now() - started) / 20).toBeLessThan(15);
    expect(searchBlocks(searchIndex(many), 'b299')[0].id).toBe('b299');
    expect(searchBlocks(searchIndex(many), 'n + 17')[0].id).toBe('b17');
  });

  it('steps through the matches, wrapping around', () => {
    expect(stepMatch(3, 2, 1)).toBe(0);
    expect(stepMatch(3, 0, -1)).toBe(2);
    expect(stepMatch(0, 0, 1)).toBe(-1);
  });
});

const step = (block: string, next: string | null, status = 'succeeded') => ({ block, next, status, via: 'next' }) as Step;

describe('breadcrumbs', () => {
  it('goes down a trail and back up to any crumb', () => {
    const one = drillInto([], 'triage.yaml', 'classify');
    const two = drillInto(one, 'sub/classify_one.yaml', 'inner');
    expect(runAddress(two)).toBe('classify/inner');
    expect(crumbTexts(two, 'leaf.yaml')).toEqual(['triage.yaml', 'classify_one.yaml', 'leaf.yaml']);
    expect(crumbBack(two, 0)).toEqual({ path: 'triage.yaml', crumbs: [] });
    expect(crumbBack(two, 1)).toEqual({ path: 'sub/classify_one.yaml', crumbs: one });
    expect(crumbBack(two, 5)).toBeNull();
  });

  it("shows a child's steps by its own ids, its links and failures", () => {
    const run = {
      run_id: 'r', diagram: 'triage.yaml', status: 'succeeded', errors: [], blocks: ['start', 'classify'], links: [], failed: null,
      passes: {}, events: [], count: 0, variables: null,
      steps: [step('start', 'classify'), step('classify', null), step('classify/start', 'classify/ask'), step('classify/ask', null, 'failed'),
        step('classify/inner/x', null)],
    } as unknown as RunData;
    const child = childRun(run, 'classify');
    expect(child.steps.map((s) => s.block)).toEqual(['start', 'ask', 'inner/x']);
    expect(child.blocks).toEqual(['ask', 'start']);
    expect(child.links).toEqual([['start', 'ask']]);
    expect(child.failed).toEqual(['ask']);
    expect(childRun(run, '')).toBe(run);
  });
});

describe('runs you can search', () => {
  it('sends only the filters given', () => {
    expect(filterQuery(NO_FILTER)).toBe('');
    expect(filtering(NO_FILTER)).toBe(false);
    const f = { ...NO_FILTER, status: 'failed', block: ' ask ', text: 'order 42' };
    expect(filterQuery(f)).toBe('status=failed&block=ask&text=order+42');
    expect(filtering(f)).toBe(true);
  });

  it('aligns two paths where they part', () => {
    expect(diffPaths(['start', 'ask', 'reply'], ['start', 'ask', 'escalate', 'reply'])).toEqual([
      { left: 'start', right: 'start', same: true }, { left: 'ask', right: 'ask', same: true },
      { left: '', right: 'escalate', same: false }, { left: 'reply', right: 'reply', same: true },
    ]);
  });

  it('lists differing variables first', () => {
    const rows = diffVariables({ a: 1, b: [1], c: 'x' }, { a: 1, b: [2], d: true });
    expect(rows.map((r) => [r.name, r.same])).toEqual([['b', false], ['c', false], ['d', false], ['a', true]]);
  });

  it('compares two runs: where they part, whether the variables are known', () => {
    const run = (blocksTaken: string[], variables: Record<string, unknown> | null) =>
      ({ steps: blocksTaken.map((b) => step(b, null)), variables }) as unknown as RunData;
    const same = compareRuns(run(['start', 'ask'], { x: 1 }), run(['start', 'ask'], { x: 1 }));
    expect(same.parted).toBe(-1);
    const parted = compareRuns(run(['start', 'ask'], null), run(['start', 'fail'], { x: 1 }));
    expect(parted.parted).toBe(1);
    expect(parted.variablesKnown).toBe(false);
  });
});

describe('records as tables', () => {
  it('reads a list of records as columns, anything else as not a table', () => {
    expect(asRecords([{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello', name: 'bot' }]))
      .toEqual({ columns: ['role', 'content', 'name'], rows: expect.any(Array) });
    expect(asRecords([])).toBeNull();
    expect(asRecords([1, 2])).toBeNull();
    expect(asRecords([{ a: 1 }, [1]])).toBeNull();
    expect(asRecords({ a: 1 })).toBeNull();
  });

  it('writes cells as text', () => {
    expect(cellText(undefined)).toBe('');
    expect(cellText({ a: 1 })).toBe('{"a":1}');
    expect(cellText('x'.repeat(400)).length).toBe(300);
  });
});
