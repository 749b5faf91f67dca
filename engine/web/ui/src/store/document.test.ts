import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sharing } from './document';
import { createStudio, isDirty } from './index';
import { addBlock, setField } from '../model/ops';
import { format, keys, loopDiagram, orderAgent, palette } from '../test/fixtures';
import { basics, emptyCompiled, fakeServer, session } from '../test/server';

let studio: ReturnType<typeof createStudio>;

beforeEach(() => {
  vi.useFakeTimers();
  fakeServer({ ...basics(), 'POST /api/validate': () => ({ problems: [], compiled: emptyCompiled, valid: true, registries: [] }) });
  studio = createStudio();
  const d = orderAgent();
  studio.setState({ diagram: d, saved: d, path: 'order_agent.yaml', session, format, palette, links: keys });
});

afterEach(() => {
  vi.clearAllTimers();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('the document slice: edits and their history', () => {
  it('undoes and redoes snapshots; undoing to the saved one is clean again', () => {
    studio.getState().apply((d) => addBlock(d, 'Set', [0, 0]).diagram);
    expect(isDirty(studio.getState())).toBe(true);
    studio.getState().undo();
    expect(isDirty(studio.getState())).toBe(false);
    studio.getState().redo();
    expect(studio.getState().diagram!.blocks.map((b) => b.id)).toContain('set');
  });
  it('coalesces typing in one field into one undo step', () => {
    for (const text of ['a', 'ab', 'abc']) studio.getState().apply((d) => setField(d, 'ask', ['label'], text), { coalesce: 'ask:label' });
    expect(studio.getState().past).toHaveLength(1);
    studio.getState().undo();
    expect(studio.getState().diagram!.blocks[1].label).toBe('Ask Claude');
  });
  it('refuses edits in a read-only session, and before the link keys are known', () => {
    studio.setState({ session: { ...session, read_only: true } });
    expect(studio.getState().apply((d) => addBlock(d, 'Set', [0, 0]).diagram)).toBe(false);
    studio.setState({ session, links: null });
    expect(studio.getState().apply((d) => addBlock(d, 'Set', [0, 0]).diagram)).toBe(false);
    expect(isDirty(studio.getState())).toBe(false);
    expect(studio.getState().toasts.map((t) => t.kind)).toEqual(['warning', 'warning']);
  });
  it('says what an edit that throws got wrong, and changes nothing', () => {
    expect(studio.getState().apply(() => { throw new Error("a block 'done' already exists"); })).toBe(false);
    expect(studio.getState().toasts.at(-1)).toMatchObject({ message: "a block 'done' already exists", kind: 'error' });
    expect(studio.getState().past).toHaveLength(0);
  });
  it('gives each edit the format\'s link keys', () => {
    let given: unknown = null;
    studio.getState().apply((d, k) => { given = k; return d; });
    expect(given).toBe(keys);
  });
  it('copies and pastes the selection with fresh ids, then deletes it', () => {
    studio.setState({ selection: ['ask', 'dispatch'] });
    studio.getState().copy();
    studio.getState().pasteClipboard();
    expect(studio.getState().selection).toEqual(['ask_2', 'dispatch_2']);
    expect(studio.getState().diagram!.blocks.find((b) => b.id === 'ask_2')!.next).toEqual([{ to: 'dispatch_2', when: '{{ called_tools | length > 0 }}' }]);
    studio.getState().deleteSelection();
    expect(studio.getState().diagram!.blocks.map((b) => b.id)).toEqual(['start', 'ask', 'dispatch', 'apologise', 'done']);
  });
  it('deletes the selected link: a next link by its place, a port by its kind', () => {
    studio.setState({ selection: [], selectedEdge: 'next:ask:0' });
    studio.getState().deleteSelection();
    expect(studio.getState().diagram!.blocks[1].next).toBe('done');
    expect(studio.getState().selectedEdge).toBeNull();
    const loop = loopDiagram();
    studio.getState().replaceDocument(loop);
    studio.setState({ selectedEdge: 'body:each' });
    studio.getState().deleteSelection();
    expect(studio.getState().diagram!.blocks[1]).not.toHaveProperty('body');
  });
  it('starts the history again for a new document, and keeps it for a reload of the same one', () => {
    studio.getState().apply((d) => addBlock(d, 'Set', [0, 0]).diagram);
    const edited = studio.getState().diagram;
    studio.getState().replaceDocument(edited, { keepHistory: true });
    expect(studio.getState().past).toHaveLength(1);
    studio.getState().replaceDocument(orderAgent());
    expect(studio.getState().past).toHaveLength(0);
    expect(studio.getState().future).toHaveLength(0);
  });
  it('asks the server to validate once the edits pause', async () => {
    const server = fakeServer({ 'POST /api/validate': () => ({ problems: [], compiled: emptyCompiled, valid: true, registries: [] }) });
    for (const text of ['a', 'ab']) studio.getState().apply((d) => setField(d, 'ask', ['label'], text), { coalesce: 'ask:label' });
    expect(studio.getState().validating).toBe(true);
    await vi.advanceTimersByTimeAsync(299);
    expect(server.requests).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    await vi.waitFor(() => expect(studio.getState().validating).toBe(false));
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /api/validate']);
    expect((server.requests[0].body as { diagram: { blocks: Array<{ label?: string }> } }).diagram.blocks[1].label).toBe('ab');
  });
});

describe('moving blocks', () => {
  it('keeps where a drag has the blocks apart from the document, then puts them down as one edit', () => {
    studio.getState().dragTo({ ask: { x: 10, y: 20 } });
    studio.getState().dragTo({ ask: { x: 30.4, y: 40.6 } });
    expect(studio.getState().dragging).toEqual({ ask: { x: 30.4, y: 40.6 } });
    expect(isDirty(studio.getState())).toBe(false);
    studio.getState().moveTo({ ask: { x: 30.4, y: 40.6 } });
    expect(studio.getState().dragging).toBeNull();
    expect(studio.getState().diagram!.blocks[1].position).toEqual([30, 41]);
    expect(studio.getState().past).toHaveLength(1);
  });
  it('makes one undo step of arrow-key moves of the same blocks, but one per drag', () => {
    for (const x of [4, 8, 12]) studio.getState().moveTo({ ask: { x, y: 0 } });
    expect(studio.getState().past).toHaveLength(1);
    for (const x of [100, 200]) {
      studio.getState().dragTo({ ask: { x, y: 0 } });
      studio.getState().moveTo({ ask: { x, y: 0 } });
    }
    expect(studio.getState().past).toHaveLength(3);
    studio.getState().undo();
    expect(studio.getState().diagram!.blocks[1].position).toEqual([100, 0]);
  });
  it('a drag in a read-only session ends where it began', () => {
    studio.setState({ session: { ...session, read_only: true } });
    studio.getState().dragTo({ ask: { x: 10, y: 20 } });
    studio.getState().moveTo({ ask: { x: 10, y: 20 } });
    expect(studio.getState().dragging).toBeNull();
    expect(studio.getState().diagram!.blocks[1]).not.toHaveProperty('position');
  });
});

describe('a text read again (the YAML pane)', () => {
  it('keeps the blocks that did not change, so the canvas redraws only the one typed in', () => {
    const before = orderAgent();
    const read = JSON.parse(JSON.stringify(before)) as typeof before;
    read.blocks[1] = { ...read.blocks[1], label: 'Typed' };
    const next = sharing(before, read);
    expect(next.blocks[0]).toBe(before.blocks[0]);
    expect(next.blocks[1]).not.toBe(before.blocks[1]);
    expect(next.blocks[1].label).toBe('Typed');
    expect(sharing(before, JSON.parse(JSON.stringify(before)))).toBe(before);
  });
});
