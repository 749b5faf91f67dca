/** Issue 43, fix 7: arrow keys move the selected blocks, 10 px (Shift: 50 px), as one undo step; not while typing. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { useStudio } from './store';
import { arrowDelta, moveSelectionByKey } from './keyMoves';
import { SHORTCUTS } from './shortcuts';
import { format, keys, orderAgent, palette } from './test/fixtures';
import { basics, emptyCompiled, fakeServer, session } from './test/server';

const press = (key: string, extra: Partial<KeyboardEvent> = {}) =>
  moveSelectionByKey({ key, shiftKey: false, ctrlKey: false, metaKey: false, altKey: false, target: document.body, ...extra });

beforeEach(() => {
  vi.useFakeTimers();
  fakeServer({ ...basics(), 'POST /api/validate': () => ({ problems: [], compiled: emptyCompiled, valid: true, registries: [] }) });
  const d = orderAgent();
  d.blocks[1].position = [100, 200];
  useStudio.setState({ diagram: d, saved: d, path: 'order_agent.yaml', session, format, palette, links: keys, past: [], future: [], selection: ['ask'], dialog: null, helpOpen: false });
});

afterEach(() => {
  vi.clearAllTimers();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('arrow-key moves', () => {
  it('steps 10 px, 50 px with Shift', () => {
    expect(arrowDelta('ArrowLeft', false)).toEqual({ x: -10, y: 0 });
    expect(arrowDelta('ArrowDown', true)).toEqual({ x: 0, y: 50 });
    expect(arrowDelta('Enter', false)).toBeNull();
  });
  it('moves the selected block, one undo step for a run of presses', () => {
    expect(press('ArrowRight')).toBe(true);
    expect(press('ArrowRight')).toBe(true);
    expect(press('ArrowUp', { shiftKey: true })).toBe(true);
    const ask = useStudio.getState().diagram!.blocks.find((b) => b.id === 'ask')!;
    expect(ask.position).toEqual([120, 150]);
    expect(useStudio.getState().past).toHaveLength(1);
  });
  it('leaves the keys to a field, a dialog, a modifier, an empty selection, a read-only session', () => {
    const input = document.createElement('input');
    expect(press('ArrowRight', { target: input })).toBe(false);
    expect(press('ArrowRight', { ctrlKey: true })).toBe(false);
    useStudio.setState({ helpOpen: true });
    expect(press('ArrowRight')).toBe(false);
    useStudio.setState({ helpOpen: false, selection: [] });
    expect(press('ArrowRight')).toBe(false);
    useStudio.setState({ selection: ['ask'], session: { ...session, read_only: true } });
    expect(press('ArrowRight')).toBe(false);
    expect(useStudio.getState().diagram!.blocks.find((b) => b.id === 'ask')!.position).toEqual([100, 200]);
  });
  it('is listed in the ? help', () => {
    expect(SHORTCUTS.some(([keysText, what]) => keysText.includes('←') && /10 px/.test(what) && /50 px/.test(what))).toBe(true);
  });
});
