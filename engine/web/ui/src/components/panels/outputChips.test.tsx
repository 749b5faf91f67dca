/** Issue 43, fix 8: a block's output chips insert a reference to the output, as the engine's templates read it. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { useRef, useState } from 'react';
import { outputReference, variableHolding } from '../../model/outputRef';
import { KeyValueRows } from '../fields/KeyValueRows';
import { TemplateInput } from '../fields/TemplateInput';
import { OutputChips } from './OutputChips';

afterEach(cleanup);

describe('an output\'s reference', () => {
  it('is the output itself in the block\'s own set', () => {
    expect(outputReference('result', { answer: '{{ result }}' }, true)).toEqual({ text: '{{ result }}' });
  });
  it('is the variable the set gives it elsewhere', () => {
    expect(variableHolding('result', { n: '{{ count }}', answer: '{{result}}' })).toBe('answer');
    expect(outputReference('result', { answer: '{{ result }}' }, false)).toEqual({ text: '{{ answer }}' });
  });
  it('adds a variable to the set where none holds it (named like the output, unless taken)', () => {
    expect(outputReference('result', undefined, false)).toEqual({ text: '{{ result }}', addSet: { key: 'result', value: '{{ result }}' } });
    expect(outputReference('result', { result: '{{ result | upper }}' }, false))
      .toEqual({ text: '{{ result_2 }}', addSet: { key: 'result_2', value: '{{ result }}' } });
  });
});

function Form({ initialSet, onAddSet }: { initialSet: Record<string, unknown>; onAddSet: (k: string, v: string) => void }) {
  const form = useRef<HTMLDivElement>(null);
  const [prompt, setPrompt] = useState('Say: ');
  const [set, setSet] = useState<Record<string, unknown> | undefined>(initialSet);
  return (
    <div ref={form}>
      <section className="section"><h3>Block</h3><input aria-label="Id" defaultValue="ask" /></section>
      <section className="section">
        <TemplateInput ariaLabel="prompt" testId="field-prompt" value={prompt} onChange={setPrompt} names={[]} />
      </section>
      <section className="section">
        <OutputChips outputs={['result', 'history']} blockId="ask" set={set} form={form}
          onAddSet={(k, v) => { onAddSet(k, v); setSet({ ...(set ?? {}), [k]: v }); }} />
        <KeyValueRows label="Set" value={set} templates names={[]} testId="field-set" onChange={setSet} />
      </section>
    </div>
  );
}

describe('output chips', () => {
  it('insert at the cursor of the field last focused: the variable elsewhere, the output in the set', () => {
    const added = vi.fn();
    render(<Form initialSet={{ answer: '{{ result }}' }} onAddSet={added} />);
    const prompt = screen.getByTestId('field-prompt') as HTMLTextAreaElement;
    fireEvent.focus(prompt);
    prompt.focus();
    prompt.setSelectionRange(5, 5);
    fireEvent.click(screen.getByTestId('output-chip-result'));
    expect(prompt.value).toBe('Say: {{ answer }}');
    expect(document.activeElement).toBe(prompt);

    const answer = screen.getByTestId('field-set-answer') as HTMLTextAreaElement;
    answer.focus();
    answer.setSelectionRange(0, answer.value.length);
    fireEvent.click(screen.getByTestId('output-chip-history'));
    expect(answer.value).toBe('{{ history }}');
    expect(added).not.toHaveBeenCalled();
  });
  it('with no field focused, adds a set row holding the output', () => {
    const added = vi.fn();
    render(<Form initialSet={{}} onAddSet={added} />);
    fireEvent.click(screen.getByTestId('output-chip-result'));
    expect(added).toHaveBeenCalledWith('result', '{{ result }}');
    expect((screen.getByTestId('field-set-result') as HTMLTextAreaElement).value).toBe('{{ result }}');
  });
  it('never writes into the id or a set key', () => {
    const added = vi.fn();
    render(<Form initialSet={{ answer: '{{ result }}' }} onAddSet={added} />);
    const id = screen.getByLabelText('Id') as HTMLInputElement;
    id.focus();
    fireEvent.click(screen.getByTestId('output-chip-result'));
    expect(id.value).toBe('ask');
    expect(added).not.toHaveBeenCalled(); // the set holds it already: nothing to add, nowhere to write
  });
});
