import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Parsed } from '../api/types';
import { setField } from '../model/ops';
import { basics, diagramFile, emptyCompiled, fakeServer, placedOrderAgent, type Request } from '../test/server';
import { createStudio, isDirty, paneShown } from './index';
import { keptLevels } from './sync';

let studio: ReturnType<typeof createStudio>;

beforeEach(() => {
  vi.useFakeTimers();
  localStorage.clear();
  localStorage.setItem('diagrama:yaml-pane', 'open');
  studio = createStudio();
  history.replaceState(null, '', '#');
});

afterEach(() => {
  vi.clearAllTimers();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

const TEXT = 'diagram: order-agent\nblocks: []\n';
const parsed = (diagram: Parsed['diagram'], extra: Partial<Parsed> = {}): Parsed => ({
  problems: [], compiled: emptyCompiled, valid: true, registries: [], diagram, blocks: {}, checked: true, ...extra,
});

function server(extra: Record<string, (r: Request) => unknown> = {}) {
  return fakeServer({
    ...basics(),
    'GET /api/diagrams/order_agent.yaml': () => diagramFile('order_agent.yaml'),
    'GET /api/diagrams/order_agent.yaml/source': (r) => (r.query.get('hash') === 'h0'
      ? { path: 'order_agent.yaml', hash: 'h0', text: 'base\n', blocks: {} }
      : { path: 'order_agent.yaml', hash: 'h1', text: TEXT, blocks: { ask: { first: 3, last: 9 } } }),
    'GET /api/diagrams/order_agent.yaml/runs': () => [],
    'GET /api/diagrams': () => [],
    ...extra,
  });
}

async function opened() {
  await studio.getState().init();
  await vi.waitFor(() => expect(studio.getState().sourceText).toBe(TEXT));
}

describe('the source slice: the YAML beside the canvas', () => {
  it('loads the file\'s text with the document, and its blocks\' lines', async () => {
    history.replaceState(null, '', '#order_agent.yaml');
    server();
    await opened();
    expect(studio.getState().blockLines).toEqual({ ask: { first: 3, last: 9 } });
    expect(isDirty(studio.getState())).toBe(false);
  });

  it('sends a typed text to the server\'s reader and takes its diagram and problems, lines and all', async () => {
    history.replaceState(null, '', '#order_agent.yaml');
    const typed = placedOrderAgent();
    typed.blocks[1] = { ...typed.blocks[1], label: 'Typed' };
    const s = server({ 'POST /api/parse': () => parsed(typed, { problems: [{ file: null, line: 4, column: 3, block: 'ask', field: 'label',
      message: 'm', hint: null, code: 'c', severity: 'warning' }] }) });
    await opened();
    studio.getState().typeSource(`${TEXT}# typed\n`);
    expect(isDirty(studio.getState())).toBe(true);
    await vi.waitFor(() => expect(studio.getState().diagram?.blocks[1].label).toBe('Typed'));
    expect(s.requests.find((r) => r.path === '/api/parse')?.body).toEqual({ path: 'order_agent.yaml', text: `${TEXT}# typed\n`, check: false });
    expect(studio.getState().problems[0].line).toBe(4);
    expect(studio.getState().sourceFor).toBe(studio.getState().diagram); // the pane holds the document: no preview asked
    expect(s.requests.some((r) => r.path.endsWith('/preview'))).toBe(false);
  });

  it('asks for the text a canvas edit\'s save would write, over the pane\'s text', async () => {
    history.replaceState(null, '', '#order_agent.yaml');
    const s = server({ 'POST /api/diagrams/order_agent.yaml/preview': () => ({ text: `${TEXT}# previewed\n`, blocks: {} }) });
    await opened();
    studio.getState().apply((d) => setField(d, 'ask', ['label'], 'Asked'));
    await vi.waitFor(() => expect(studio.getState().sourceText).toBe(`${TEXT}# previewed\n`));
    const preview = s.requests.find((r) => r.path.endsWith('/preview'))!;
    expect(preview.body).toMatchObject({ base_hash: 'h1', text: TEXT });
    expect(studio.getState().sourceFor).toBe(studio.getState().diagram);
  });

  it('saves the pane\'s text as typed when it holds the document', async () => {
    history.replaceState(null, '', '#order_agent.yaml');
    const typed = placedOrderAgent();
    const s = server({
      'POST /api/parse': () => parsed(typed),
      'PUT /api/diagrams/order_agent.yaml/source': () => ({ hash: 'h2', problems: [], compiled: emptyCompiled, valid: true, registries: [] }),
    });
    await opened();
    studio.getState().typeSource(`${TEXT}# kept comment\n`);
    await vi.waitFor(() => expect(studio.getState().diagram).toEqual(typed));
    await studio.getState().save();
    expect(s.requests.find((r) => r.method === 'PUT')?.body).toEqual({ base_hash: 'h1', text: `${TEXT}# kept comment\n` });
    expect(isDirty(studio.getState())).toBe(false);
  });
});

describe('the pane shows the document, and no edit is lost on either side (the pane once dropped a form\'s edit)', () => {
  const DESCRIBED = 'diagram: order-agent\ndescription: Typed in the form\nblocks: []\n';
  const TYPED = 'diagram: order-agent-typed\nblocks: []\n';
  const BOTH = 'diagram: order-agent-typed\ndescription: Typed in the form\nblocks: []\n';
  /** The server's reading of these texts: the name and the description they write. */
  const reading = (r: Request) => {
    const text = (r.body as { text: string }).text;
    return parsed({ ...placedOrderAgent(), diagram: /diagram: (\S+)/.exec(text)![1],
      description: /description: (.*)/.exec(text)?.[1] ?? 'Answers a customer question.' });
  };
  const editDescription = () => studio.getState().apply((d) => ({ ...d, description: 'Typed in the form' }));

  it('opens on the text of edits made while it was closed, and a text typed there keeps them', async () => {
    localStorage.setItem('diagrama:yaml-pane', 'closed');
    studio = createStudio();
    history.replaceState(null, '', '#order_agent.yaml');
    const s = server({
      'POST /api/diagrams/order_agent.yaml/preview': () => ({ text: DESCRIBED, blocks: {} }),
      'POST /api/parse': reading,
    });
    await studio.getState().init();
    editDescription();
    studio.getState().setPaneOpen(true);
    await vi.waitFor(() => expect(studio.getState().sourceText).toBe(DESCRIBED));
    expect(s.requests.find((r) => r.path.endsWith('/preview'))?.body).toMatchObject({ text: TEXT, diagram: { description: 'Typed in the form' } });
    expect(studio.getState()).toMatchObject({ savedText: TEXT, sourceBase: DESCRIBED });
    expect(studio.getState().sourceFor).toBe(studio.getState().diagram);
    studio.getState().typeSource(BOTH);
    await vi.waitFor(() => expect(studio.getState().diagram?.diagram).toBe('order-agent-typed'));
    expect(studio.getState().diagram?.description).toBe('Typed in the form');
  });

  it('puts keys typed while an edit\'s text is on its way into that text, and never reads them over the edit', async () => {
    history.replaceState(null, '', '#order_agent.yaml');
    let release: (text: string) => void = () => undefined;
    const s = server({
      'POST /api/diagrams/order_agent.yaml/preview': () => new Promise((resolve) => {
        release = (text) => resolve({ text, blocks: {} });
      }),
      'POST /api/parse': reading,
    });
    await opened();
    editDescription();
    await vi.waitFor(() => expect(s.requests.some((r) => r.path.endsWith('/preview'))).toBe(true));
    studio.getState().typeSource(TYPED);
    await vi.waitFor(() => expect(s.requests.some((r) => r.path === '/api/parse')).toBe(true));
    await vi.advanceTimersByTimeAsync(500);
    // the typed text lacks the description: its reading is held, the document keeps the form's edit
    expect(studio.getState()).toMatchObject({ parsing: true, sourceText: TYPED });
    expect(studio.getState().diagram).toMatchObject({ diagram: 'order-agent', description: 'Typed in the form' });
    expect(s.requests.filter((r) => r.path.endsWith('/preview'))).toHaveLength(1); // asked once, however often wanted
    release(DESCRIBED);
    await vi.waitFor(() => expect(studio.getState().parsing).toBe(false));
    expect(studio.getState().sourceText).toBe(BOTH);
    expect(studio.getState().diagram).toMatchObject({ diagram: 'order-agent-typed', description: 'Typed in the form' });
    expect(studio.getState().sourceFor).toBe(studio.getState().diagram);
    expect(s.requests.filter((r) => r.path === '/api/parse').at(-1)?.body).toMatchObject({ text: BOTH });
  });

  it('follows a diagram taken from elsewhere (a draft) instead of claiming it holds it', async () => {
    history.replaceState(null, '', '#order_agent.yaml');
    server({ 'POST /api/diagrams/order_agent.yaml/preview': () => ({ text: DESCRIBED, blocks: {} }) });
    await opened();
    studio.getState().adoptDiagram({ ...placedOrderAgent(), description: 'Typed in the form' });
    expect(studio.getState().sourceFor).not.toBe(studio.getState().diagram);
    await vi.waitFor(() => expect(studio.getState().sourceText).toBe(DESCRIBED));
    expect(studio.getState().sourceFor).toBe(studio.getState().diagram);
  });

  it('keeps a broken file\'s pane open once its text reads, until it is closed', async () => {
    localStorage.setItem('diagrama:yaml-pane', 'closed');
    studio = createStudio();
    history.replaceState(null, '', '#broken.yaml');
    server({
      'GET /api/diagrams/broken.yaml': () => ({ ...diagramFile('broken.yaml'), diagram: null, valid: false }),
      'GET /api/diagrams/broken.yaml/source': () => ({ path: 'broken.yaml', hash: 'h1', text: 'blocks: [\n', blocks: {} }),
      'GET /api/diagrams/broken.yaml/runs': () => [],
      'POST /api/parse': () => parsed(placedOrderAgent()),
    });
    await studio.getState().init();
    await vi.waitFor(() => expect(studio.getState().sourceText).toBe('blocks: [\n'));
    expect(paneShown(studio.getState())).toBe(true);
    studio.getState().typeSource('blocks: []\n');
    await vi.waitFor(() => expect(studio.getState().diagram).not.toBeNull());
    expect(paneShown(studio.getState())).toBe(true);
    expect(studio.getState().paneOpen).toBe(false);
    studio.getState().setPaneOpen(false);
    expect(paneShown(studio.getState())).toBe(false);
    expect(localStorage.getItem('diagrama:yaml-pane')).toBe('closed');
  });
});

describe('drafts and merges', () => {
  it('keeps unsaved edits in the browser\'s storage and offers them back after a reload (issue 29, item 9)', async () => {
    history.replaceState(null, '', '#order_agent.yaml');
    server({ 'POST /api/diagrams/order_agent.yaml/preview': () => ({ text: `${TEXT}# edited\n`, blocks: {} }) });
    await opened();
    studio.getState().apply((d) => setField(d, 'ask', ['label'], 'Kept'));
    await vi.advanceTimersByTimeAsync(1000);
    // a new page (the reload): the same file, its draft offered and restored
    studio = createStudio();
    const kept = placedOrderAgent();
    kept.blocks[1] = { ...kept.blocks[1], label: 'Kept' };
    const again = server({ 'POST /api/parse': () => parsed(kept) });
    await opened();
    expect(studio.getState().draftOffer?.hash).toBe('h1');
    await studio.getState().restoreDraft();
    await vi.waitFor(() => expect(studio.getState().diagram?.blocks[1].label).toBe('Kept'));
    expect(again.requests.find((r) => r.path === '/api/parse')?.body).toMatchObject({ text: `${TEXT}# edited\n` });
    expect(isDirty(studio.getState())).toBe(true);
  });

  it('merges yours, theirs and the base instead of overwriting theirs', async () => {
    history.replaceState(null, '', '#order_agent.yaml');
    server({ 'GET /api/diagrams/order_agent.yaml/source': (r) => (r.query.get('hash') === 'h1'
      ? { path: 'order_agent.yaml', hash: 'h1', text: 'a\nb\nc\n', blocks: {} }
      : { path: 'order_agent.yaml', hash: 'h3', text: 'a\nb\nc\ntheirs\n', blocks: {} }) });
    await studio.getState().init();
    await studio.getState().startMerge('h1', 'mine\na\nb\nc\n');
    const merge = studio.getState().merge!;
    expect(merge).toMatchObject({ base: 'a\nb\nc\n', theirs: 'a\nb\nc\ntheirs\n', theirsHash: 'h3', conflicts: 0 });
    expect(merge.result).toBe('mine\na\nb\nc\ntheirs\n');
  });
});

describe('the registry\'s groups while building (issue 29, item 4)', () => {
  it('come with every check, so the picker is there while the diagram has problems and follows a new registry', async () => {
    history.replaceState(null, '', '#order_agent.yaml');
    const groups = [{ group: 'orders', description: 'Orders', tools: [] }];
    server({ 'POST /api/validate': () => ({ problems: [{ file: null, line: null, column: null, block: 'ask', field: 'with.request',
      message: 'm', hint: null, code: 'c', severity: 'error' }], compiled: emptyCompiled, valid: false, registries: groups }) });
    await opened();
    expect(studio.getState().registries).toEqual([]);
    studio.getState().apply((d) => ({ ...d, tools: 'registry/orders.yaml' }));
    await vi.waitFor(() => expect(studio.getState().registries).toEqual(groups));
  });
});

describe('effective levels', () => {
  it('are kept from the last compiled picture while the diagram has problems (issue 29)', () => {
    const before = { ...emptyCompiled, levels: { ask: { error_level: { value: 'Handle', inherited: true, from: "Start 'start'" },
      message_level: { value: 'Debug', inherited: true, from: "Start 'start'" } } } };
    expect(keptLevels(emptyCompiled, before).levels).toBe(before.levels);
    expect(keptLevels(before, emptyCompiled)).toBe(before);
  });
});
