import { afterEach, describe, expect, it } from 'vitest';
import { act, cleanup, renderHook } from '@testing-library/react';
import { forgetKeptState, useKeptState } from './keptState';

afterEach(() => {
  cleanup();
  forgetKeptState();
});

describe('useKeptState', () => {
  it('gives back what was set for a key after its component went away, and the initial value for a new key', () => {
    const first = renderHook(({ key }) => useKeptState(key, () => 'initial'), { initialProps: { key: 'a' } });
    expect(first.result.current[0]).toBe('initial');
    act(() => first.result.current[1]('typed'));
    expect(first.result.current[0]).toBe('typed');
    first.unmount();

    const again = renderHook(({ key }) => useKeptState(key, () => 'initial'), { initialProps: { key: 'a' } });
    expect(again.result.current[0]).toBe('typed');
    again.rerender({ key: 'b' }); // another file, run or request: its own value, from the render the key changes in
    expect(again.result.current[0]).toBe('initial');
    again.rerender({ key: 'a' });
    expect(again.result.current[0]).toBe('typed');
  });

  it('applies updates in turn, each from the value the one before set', () => {
    const { result } = renderHook(() => useKeptState('n', () => 0));
    act(() => {
      result.current[1]((n) => n + 1);
      result.current[1]((n) => n + 1);
    });
    expect(result.current[0]).toBe(2);
  });
});
