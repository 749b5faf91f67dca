/**
 * State a panel keeps while another tab shows: the side panel's tabs unmount their panel, and what a person had typed
 * (a run's inputs, a chat message, a Wait's answer) went with it when a click on a block showed its properties.
 * Kept per key for the page's life; a key of its own for each thing typed for (the file, the run and its request),
 * so a new one starts from its own initial value.
 */
import { useCallback, useRef, useState } from 'react';

const kept = new Map<string, unknown>();

export function useKeptState<T>(key: string, initial: () => T): [T, (next: T | ((previous: T) => T)) => void] {
  const read = (): T => (kept.has(key) ? (kept.get(key) as T) : initial());
  const [state, setState] = useState(() => ({ key, value: read() }));
  let current = state;
  if (state.key !== key) {
    current = { key, value: read() };
    setState(current); // while rendering (React's "adjust state when a prop changes"): no frame shows the old key's value
  }
  const latest = useRef(current);
  latest.current = current;
  const set = useCallback((next: T | ((previous: T) => T)) => {
    // the value last shown or set for this key (several updates in one event each see the one before)
    const previous = latest.current.key === key ? latest.current.value : read();
    const value = typeof next === 'function' ? (next as (previous: T) => T)(previous) : next;
    kept.set(key, value);
    latest.current = { key, value };
    setState(latest.current);
  }, [key]);
  return [current.value, set];
}

/** Forgets what was kept (tests). */
export function forgetKeptState(): void {
  kept.clear();
}
