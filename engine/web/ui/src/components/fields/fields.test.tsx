import { describe, expect, it, vi, afterEach } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { SchemaField } from './SchemaField';
import { TableField } from './TableField';
import { TemplateInput } from './TemplateInput';
import { formFields } from '../../model/schemaForm';
import type { JsonSchema } from '../../model/jsonSchema';

afterEach(cleanup);

const schema: JsonSchema = {
  type: 'object',
  properties: {
    temperature: { anyOf: [{ type: 'number', minimum: 0, maximum: 1 }, { type: 'null' }], default: null, title: 'Temperature' },
    mode: { enum: ['fast', 'slow'], type: 'string', title: 'Mode' },
    stream: { type: 'boolean', title: 'Stream' },
    tools: { anyOf: [{ type: 'array' }, { type: 'null' }], title: 'Tools' },
  },
};
const fields = Object.fromEntries(formFields(schema, { tools: 'tools' }).map((f) => [f.name, f]));

describe('the tools field (issue 29, item 3)', () => {
  it('switched to an expression, calls tools() with a registry group instead of naming the function', () => {
    const onChange = vi.fn();
    render(<TableField label="Tools" kind="tools" value={[]} onChange={onChange} names={[]} testId="field-tools"
      registries={[{ group: 'orders', description: 'Orders', tools: [] }]} />);
    fireEvent.click(screen.getByRole('radio', { name: 'Expression' }));
    expect(onChange).toHaveBeenLastCalledWith("{{ tools('orders') }}");
  });
  it('without registries, calls tools() for every tool', () => {
    const onChange = vi.fn();
    render(<TableField label="Tools" kind="tools" value={[]} onChange={onChange} names={[]} testId="field-tools" registries={[]} />);
    fireEvent.click(screen.getByRole('radio', { name: 'Expression' }));
    expect(onChange).toHaveBeenLastCalledWith('{{ tools() }}');
  });
  it('lists each registry group with its description, and counts tools in words', () => {
    render(<TableField label="Tools" kind="tools" value="{{ tools('orders') }}" onChange={vi.fn()} names={[]} testId="field-tools"
      registries={[{ group: 'orders', description: "Looking up customers' orders", tools: [{ name: 'get', description: 'd', enabled: true }] },
        { group: 'misc', description: '', tools: [{ name: 'one', description: 'd', enabled: true }] }]} />);
    const options = [...screen.getByRole('combobox').querySelectorAll('option')].map((o) => o.textContent);
    expect(options).toContain("orders — Looking up customers' orders");
    expect(options).toContain('misc — 1 tool');
  });
});

describe('SchemaField', () => {
  it('renders a number input with the range and writes numbers', () => {
    const onChange = vi.fn();
    render(<SchemaField spec={fields.temperature} value={0.2} onChange={onChange} names={[]} problems={[]} />);
    const input = screen.getByTestId('field-temperature') as HTMLInputElement;
    expect(input.type).toBe('number');
    expect(input.min).toBe('0');
    expect(input.max).toBe('1');
    fireEvent.change(input, { target: { value: '0.7' } });
    expect(onChange).toHaveBeenLastCalledWith(0.7);
    expect(screen.getByLabelText('Temperature')).toBe(input);
  });
  it('writes a number outside the range too, so the diagram holds what the field shows and the server flags it', () => {
    const onChange = vi.fn();
    const { rerender } = render(<SchemaField spec={fields.temperature} value={0.2} onChange={onChange} names={[]} problems={[]} />);
    const input = screen.getByTestId('field-temperature') as HTMLInputElement;
    fireEvent.change(input, { target: { value: '3' } });
    expect(onChange).toHaveBeenLastCalledWith(3);
    expect(screen.getByRole('alert').textContent).toMatch(/at most 1/);
    // the server's problem arrives: it replaces the local message
    const problem = { file: null, line: 3, column: 1, block: 'ask', field: 'with.temperature', message: 'Input should be less than or equal to 1 (got 3)',
      hint: null, code: 'invalid', severity: 'error' as const };
    rerender(<SchemaField spec={fields.temperature} value={3} onChange={onChange} names={[]} problems={[problem]} />);
    expect(screen.getAllByRole('alert').map((a) => a.textContent)).toEqual(['Input should be less than or equal to 1 (got 3)']);
    expect(input.value).toBe('3');
    onChange.mockClear();
    fireEvent.change(input, { target: { value: '' } });
    expect(onChange).toHaveBeenLastCalledWith(undefined);
  });
  it('renders enums as a select and booleans as a checkbox', () => {
    const onChange = vi.fn();
    render(<SchemaField spec={fields.mode} value={undefined} onChange={onChange} names={[]} problems={[]} />);
    const select = screen.getByTestId('field-mode') as HTMLSelectElement;
    expect(select.tagName).toBe('SELECT');
    fireEvent.change(select, { target: { value: 'slow' } });
    expect(onChange).toHaveBeenLastCalledWith('slow');
    render(<SchemaField spec={fields.stream} value={true} onChange={onChange} names={[]} problems={[]} />);
    expect((screen.getByTestId('field-stream') as HTMLInputElement).type).toBe('checkbox');
  });
  it('shows the problems of the field with their hint', () => {
    render(<SchemaField spec={fields.temperature} value={2} onChange={() => undefined} names={[]}
      problems={[{ file: null, line: 3, column: 1, block: 'ask', field: 'with.temperature', message: 'too hot', hint: 'try 0.7', code: 'invalid', severity: 'error' }]} />);
    expect(screen.getByText('too hot')).toBeTruthy();
    expect(screen.getByText(/try 0.7/)).toBeTruthy();
  });
});

describe('TableField', () => {
  it('edits tools rows and flags a parameters cell that is not an object schema', () => {
    const onChange = vi.fn();
    const value = [{ name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: {} } }];
    render(<TableField label="Tools" kind="tools" value={value} onChange={onChange} names={[]} testId="field-tools" registries={[]} />);
    fireEvent.change(screen.getByLabelText('Tools row 1 Name'), { target: { value: 'get_forecast' } });
    expect(onChange).toHaveBeenLastCalledWith([{ ...value[0], name: 'get_forecast' }]);
    onChange.mockClear();
    fireEvent.change(screen.getByLabelText('Tools row 1 Parameters (JSON Schema)'), { target: { value: '{"type": "string"}' } });
    expect(onChange).not.toHaveBeenCalled();
    expect(screen.getByRole('alert').textContent).toMatch(/type/);
  });
  it('switches to expression mode', () => {
    const onChange = vi.fn();
    render(<TableField label="History" kind="history" value={[]} onChange={onChange} names={['history']} testId="field-history" registries={[]} />);
    fireEvent.click(screen.getByRole('radio', { name: 'Expression' }));
    expect(onChange).toHaveBeenLastCalledWith('{{ history }}');
  });
});

describe('TemplateInput', () => {
  it('offers names inside {{ }} and inserts the chosen one', () => {
    const onChange = vi.fn();
    const { rerender } = render(<TemplateInput ariaLabel="Request" value="" onChange={onChange} names={['question', 'history']} />);
    const box = screen.getByLabelText('Request') as HTMLTextAreaElement;
    fireEvent.change(box, { target: { value: 'Q: {{ qu', selectionStart: 8 } });
    rerender(<TemplateInput ariaLabel="Request" value="Q: {{ qu" onChange={onChange} names={['question', 'history']} />);
    const options = screen.getAllByRole('option').map((o) => o.textContent);
    expect(options).toEqual(['namequestion']);
    fireEvent.keyDown(box, { key: 'Enter' });
    expect(onChange).toHaveBeenLastCalledWith('Q: {{ question }}');
  });
});

describe("Retrieve's knowledge field", () => {
  const [knowledge] = formFields({ type: 'object', properties: { knowledge: { type: 'string', minLength: 1, title: 'Knowledge' } },
    required: ['knowledge'] });

  it("picks one of the diagram's knowledge bases", () => {
    const onChange = vi.fn();
    render(<SchemaField spec={knowledge} value="policies" onChange={onChange} names={[]} problems={[]} knowledge={['faq', 'policies']} />);
    const select = screen.getByTestId('field-knowledge') as HTMLSelectElement;
    expect(select.tagName).toBe('SELECT');
    expect([...select.options].map((o) => o.value)).toEqual(['', 'faq', 'policies']);
    fireEvent.change(select, { target: { value: 'faq' } });
    expect(onChange).toHaveBeenLastCalledWith('faq');
  });

  it('keeps a name the diagram does not declare (a registry file may), and types it where the diagram declares none', () => {
    render(<SchemaField spec={knowledge} value="shared" onChange={vi.fn()} names={[]} problems={[]} knowledge={['policies']} />);
    expect(screen.getByRole('option', { name: 'shared (not declared in this diagram)' })).toBeTruthy();
    cleanup();
    render(<SchemaField spec={knowledge} value="shared" onChange={vi.fn()} names={[]} problems={[]} knowledge={[]} />);
    expect(screen.getByTestId('field-knowledge').tagName).not.toBe('SELECT');
  });
});
