import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createStudio } from './index';

let studio: ReturnType<typeof createStudio>;

beforeEach(() => {
  vi.useFakeTimers();
  studio = createStudio();
});

afterEach(() => {
  vi.clearAllTimers();
  vi.useRealTimers();
});

describe('the UI slice', () => {
  it('changes nothing when the same selection is made again (the canvas is not drawn again for it)', () => {
    studio.getState().select(['a', 'b']);
    const before = studio.getState();
    studio.getState().select(['a', 'b']);
    expect(studio.getState()).toBe(before);
    studio.getState().select([], 'next:a:0');
    expect(studio.getState()).toMatchObject({ selection: [], selectedEdge: 'next:a:0' });
  });
  it('shows a block from elsewhere (a problem, a step): selects it and opens its properties', () => {
    studio.getState().setPanelTab('problems');
    studio.getState().focusBlock('ask');
    expect(studio.getState()).toMatchObject({ selection: ['ask'], selectedEdge: null, panelTab: 'properties' });
  });
  it('keeps the five newest toasts and takes each away after a while, errors later', () => {
    for (let i = 1; i <= 6; i++) studio.getState().toast(`t${i}`, i === 6 ? 'error' : 'info');
    expect(studio.getState().toasts.map((t) => t.message)).toEqual(['t2', 't3', 't4', 't5', 't6']);
    vi.advanceTimersByTime(4000);
    expect(studio.getState().toasts.map((t) => t.message)).toEqual(['t6']);
    vi.advanceTimersByTime(4000);
    expect(studio.getState().toasts).toEqual([]);
  });
  it('gathers where the blocks of a drag are, block by block', () => {
    studio.getState().dragTo({ a: { x: 1, y: 2 } });
    studio.getState().dragTo({ b: { x: 3, y: 4 } });
    studio.getState().dragTo({ a: { x: 5, y: 6 } });
    expect(studio.getState().dragging).toEqual({ a: { x: 5, y: 6 }, b: { x: 3, y: 4 } });
  });
  it('counts requests for a new layout and for fitting the view', () => {
    studio.getState().relayout();
    studio.getState().requestFit();
    studio.getState().requestFit();
    expect(studio.getState()).toMatchObject({ layoutGeneration: 1, fitRequest: 2 });
    studio.getState().setLayout({ nodes: {}, edges: {} }, 'x.yaml#1');
    expect(studio.getState().layoutFor).toBe('x.yaml#1');
  });
});
