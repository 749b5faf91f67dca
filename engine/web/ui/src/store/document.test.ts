import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('./api/client', () => ({
  api: { validate: vi.fn(async () => ({ problems: [], compiled: null })) },
  ApiError: class extends Error {},
}));

import { isDirty, useStudio } from './store';
import { addBlock, setField } from './model/ops';
import { orderAgent } from './test/fixtures';

describe('store history', () => {
  beforeEach(() => {
    const d = orderAgent();
    useStudio.setState({ diagram: d, saved: d, past: [], future: [], path: 'order_agent.yaml', session: { read_only: false, allow_online: false, root: 'x' } });
  });
  it('undoes and redoes snapshots; undoing to the saved one is clean again', () => {
    const s = useStudio.getState();
    s.apply((d) => addBlock(d, 'Set', [0, 0]).diagram);
    expect(isDirty(useStudio.getState())).toBe(true);
    useStudio.getState().undo();
    expect(isDirty(useStudio.getState())).toBe(false);
    useStudio.getState().redo();
    expect(useStudio.getState().diagram!.blocks.map((b) => b.id)).toContain('set');
  });
  it('coalesces typing in one field into one undo step', () => {
    const s = useStudio.getState();
    for (const text of ['a', 'ab', 'abc']) s.apply((d) => setField(d, 'ask', ['label'], text), { coalesce: 'ask:label' });
    expect(useStudio.getState().past).toHaveLength(1);
    useStudio.getState().undo();
    expect(useStudio.getState().diagram!.blocks[1].label).toBe('Ask Claude');
  });
  it('refuses edits in a read-only session', () => {
    useStudio.setState({ session: { read_only: true, allow_online: false, root: 'x' } });
    expect(useStudio.getState().apply((d) => addBlock(d, 'Set', [0, 0]).diagram)).toBe(false);
    expect(isDirty(useStudio.getState())).toBe(false);
  });
  it('copies and pastes the selection with fresh ids, then deletes it', () => {
    useStudio.setState({ selection: ['ask', 'dispatch'] });
    useStudio.getState().copy();
    useStudio.getState().pasteClipboard();
    const st = useStudio.getState();
    expect(st.selection).toEqual(['ask_2', 'dispatch_2']);
    st.deleteSelection();
    expect(useStudio.getState().diagram!.blocks.map((b) => b.id)).toEqual(['start', 'ask', 'dispatch', 'apologise', 'done']);
  });
});
