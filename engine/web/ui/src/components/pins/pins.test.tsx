/** Issue 43, add 4: a step's "Pin this output" pins its result; the block's section shows and removes the pin. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { api } from '../../api/client';
import type { Pins, Step } from '../../api/types';
import { useStudio } from '../../store';
import { pinnedOf, usePins } from '../../store/pins';
import { BlockPin, PinBadge, PinThisOutput, stepOutput } from './Pins';

const step = { block: 'classify', outputs: { result: 'change_address' } } as unknown as Step;
const answer = (pins: Pins['pins']): Pins => ({ file: pins.length ? 'classify_one.pins.scenario.yaml' : null, pins });

afterEach(() => { cleanup(); vi.restoreAllMocks(); usePins.setState({ path: null, file: null, pinned: {} }); });

describe('pinned outputs', () => {
  it('reads a step\'s output and the server\'s pins', () => {
    expect(stepOutput(step)).toBe('change_address');
    expect(pinnedOf(answer([{ block: 'a', text: 'hi', output: null } as unknown as Pins['pins'][number], { block: 'b', text: null, output: { x: 1 } }])))
      .toEqual({ a: 'hi', b: { x: 1 } });
  });
  it('pins a step\'s output, shows the badge and the pin, and removes it', async () => {
    useStudio.setState({ path: 'classify_one.yaml' });
    const pin = vi.spyOn(api, 'pin').mockResolvedValue(answer([{ block: 'classify', text: 'change_address', output: null } as unknown as Pins['pins'][number]]));
    const unpin = vi.spyOn(api, 'unpin').mockResolvedValue(answer([]));
    render(<><PinThisOutput step={step} /><PinBadge block="classify" /><BlockPin block="classify" /></>);
    fireEvent.click(screen.getByTestId('pin-classify'));
    await vi.waitFor(() => expect(screen.getByTestId('pin-badge-classify')).toBeTruthy());
    expect(pin).toHaveBeenCalledWith('classify_one.yaml', 'classify', 'change_address', undefined);
    expect(screen.getByTestId('pinned-classify').textContent).toBe('change_address');
    fireEvent.click(screen.getByTestId('unpin-classify'));
    await vi.waitFor(() => expect(screen.queryByTestId('pin-badge-classify')).toBeNull());
    expect(unpin).toHaveBeenCalledWith('classify_one.yaml', 'classify');
  });
});
