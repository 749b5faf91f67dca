import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import type { Step } from '../../api/types';
import { format, keys, orderAgent, palette } from '../../test/fixtures';
import { useStudio } from '../../store';
import { BlockProperties } from './BlockProperties';
import { DiagramProperties } from './DiagramProperties';
import { LinksEditor } from './LinksEditor';
import { where } from './ProblemsPanel';
import { StepDetails } from './StepDetails';

afterEach(cleanup);

describe('StepDetails', () => {
  it('shows a step as GET /api/runs/{id} sends it: model, tokens [in, out], the link taken, the tools called', () => {
    const step = {
      number: 2, block: 'ask', block_type: 'ClaudeRequest', offset_ms: 0.2, duration_ms: 8.7338, status: 'succeeded',
      next: 'dispatch', via: 'next', inputs: { model: 'claude-sonnet-5-5' }, outputs: { result: '' }, set: {}, error: null,
      model: 'claude-sonnet-5-5', tokens: [281, 10], called_tools: ['get_order_status'], payloads: [], scores: {}, score_parts: {}, failed_tools: [],
      http_calls: [], passages: [], cost: null, usage: { input_tokens: 281, output_tokens: 10 }, cached: false,
    } satisfies Step;
    const { container } = render(<StepDetails steps={[step]} />);
    const facts = container.querySelector('.step__facts')!.textContent;
    expect(facts).toContain('Modelclaude-sonnet-5-5');
    expect(facts).toContain('Tokensin 281 · out 10');
    expect(facts).toContain('Link takendispatch');
    expect(screen.getByText('Tool calls')).toBeTruthy();
    expect(container.textContent).toContain('get_order_status');
    expect(container.textContent).toContain('8.7 ms');
    expect(facts).not.toContain('HTTP');
  });

  it('shows each step\'s tokens per kind and cost, and the sum of a block that ran twice with its count', () => {
    const ask = (usd: number | null, usage: Record<string, number>, cached = false) => ({
      number: 2, block: 'ask', block_type: 'ClaudeRequest', offset_ms: 0.2, duration_ms: 8.7, status: 'succeeded',
      next: 'dispatch', via: 'next', inputs: {}, outputs: {}, set: {}, error: null, model: 'claude-sonnet-4-5',
      tokens: [usage.input_tokens, usage.output_tokens] as [number, number], called_tools: [], payloads: [], scores: {}, score_parts: {},
      failed_tools: [], http_calls: [], passages: [], cost: { usd }, usage, cached,
    } satisfies Step);
    const { container } = render(<StepDetails steps={[
      ask(0.0012, { input_tokens: 1281, output_tokens: 10, cache_read_tokens: 2048 }), ask(null, { input_tokens: 300, output_tokens: 5 })]} />);
    const [first, second] = [...container.querySelectorAll('.step__facts')].map((f) => f.textContent);
    expect(first).toContain('Tokensin 1,281 · out 10 · cache read 2,048');
    expect(first).toContain('Cost$0.0012');
    expect(second).toContain('Costcost unknown');
    expect(screen.getByTestId('block-cost').textContent).toBe(
      'Cost of its 2 requests: ≥ $0.0012, 1 step unpriced · tokens in 1,581 · out 15 · cache read 2,048');
    cleanup();
    const cached = render(<StepDetails steps={[ask(0, { input_tokens: 1, output_tokens: 2 }, true)]} />);
    expect(cached.container.querySelector('.step__facts')!.textContent).toContain('Cost$0 (cached)');
    expect(cached.queryByTestId('block-cost')).toBeNull();
  });

  it("shows an HttpRequest's calls: method, status and attempts", () => {
    const step = {
      number: 2, block: 'fetch', block_type: 'HttpRequest', offset_ms: 0.2, duration_ms: 3.1, status: 'succeeded',
      next: 'answer', via: 'next', inputs: {}, outputs: {}, set: {}, error: null, model: null, tokens: null, called_tools: [],
      payloads: [], scores: {}, score_parts: {}, failed_tools: [], http_calls: ['GET 200 after 2 attempts'], passages: [], cost: null,
      usage: null, cached: false,
    } satisfies Step;
    const { container } = render(<StepDetails steps={[step]} />);
    expect(container.querySelector('.step__facts')!.textContent).toContain('HTTPGET 200 after 2 attempts');
  });
});

describe('LinksEditor', () => {
  it('shows an on_error target that names no block as written, not as "none"', () => {
    const diagram = orderAgent();
    const ask = { ...diagram.blocks[1], on_error: 'apologize' };
    render(<LinksEditor block={ask} diagram={{ ...diagram, blocks: diagram.blocks.map((b) => (b.id === 'ask' ? ask : b)) }}
      whenNames={[]} keys={keys} />);
    const select = screen.getByTestId('field-on_error') as HTMLSelectElement;
    expect(select.value).toBe('apologize');
    expect(select.selectedOptions[0].textContent).toBe('apologize (unknown block)');
    expect([...select.options].filter((o) => o.value === 'apologise')).toHaveLength(1);
  });
  it('offers no extra option when the target exists', () => {
    const diagram = orderAgent();
    render(<LinksEditor block={diagram.blocks[1]} diagram={diagram} whenNames={[]} keys={keys} />);
    const select = screen.getByTestId('field-on_error') as HTMLSelectElement;
    expect(select.value).toBe('apologise');
    expect([...select.options].some((o) => o.textContent?.includes('unknown block'))).toBe(false);
  });
});

describe('where a problem is', () => {
  const base = { column: 1, message: 'm', hint: null, code: 'invalid', severity: 'error' as const };
  it('names the other file a problem is in (a tool registry) with its own line', () => {
    expect(where({ ...base, file: 'registry/orders.yaml', line: 14, block: null, field: 'tools[2].handler' }))
      .toBe('registry/orders.yaml · tools[2].handler · line 14');
  });
  it('names the block and field of a problem in the diagram itself', () => {
    expect(where({ ...base, file: null, line: 9, block: 'ask', field: 'with.temperature' }))
      .toBe('ask · with.temperature · line 9');
    expect(where({ ...base, file: null, line: null, block: null, field: null })).toBe('diagram');
  });
});

describe('BlockProperties', () => {
  it('offers the level names the server gives, and shows as "other keys" only what is not a key of every block', () => {
    const diagram = orderAgent();
    const levels = { ...format.levels, error_level: { default: 'Default', names: ['Default', 'Ignore', 'Handle', 'Retry'] } };
    useStudio.setState({ diagram, saved: diagram, format: { ...format, levels }, palette, links: keys, problems: [], compiled: null });
    const start = diagram.blocks[0];
    const { container } = render(<BlockProperties block={start} type={palette[0]} diagram={diagram} />);
    const errorLevel = screen.getByTestId('field-error_level') as HTMLSelectElement;
    expect([...errorLevel.options].map((o) => o.value)).toEqual(['', 'Ignore', 'Handle', 'Retry']);
    expect(errorLevel.value).toBe('Handle');
    expect(screen.getByTestId('field-message_level')).toBeTruthy();
    const other = [...container.querySelectorAll('.section')].find((s) => s.querySelector('h3')?.textContent?.startsWith('Other keys'))!;
    expect([...other.querySelectorAll('.field__label')].map((l) => l.textContent)).toEqual(['max_steps', 'inputs', 'variables']);
  });
});

describe('DiagramProperties', () => {
  function Panel() {
    const diagram = useStudio((s) => s.diagram);
    return diagram ? <DiagramProperties diagram={diagram} /> : null;
  }
  it('edits allowed_modules (the modules Function blocks may call) as one line, a list in the diagram', () => {
    const diagram = orderAgent();
    useStudio.setState({ diagram, saved: diagram, format, palette, links: keys, problems: [], compiled: null, registries: [] });
    render(<Panel />);
    const box = screen.getByTestId('field-allowed_modules') as HTMLInputElement;
    expect(box.value).toBe('');
    fireEvent.change(box, { target: { value: 'shop.pricing, ' } });
    expect(useStudio.getState().diagram?.allowed_modules).toEqual(['shop.pricing']);
    expect(box.value).toBe('shop.pricing, ');  // the comma being typed stays
    fireEvent.change(box, { target: { value: 'shop.pricing, shop.tax' } });
    expect(useStudio.getState().diagram?.allowed_modules).toEqual(['shop.pricing', 'shop.tax']);
    fireEvent.change(box, { target: { value: ' ' } });
    expect(useStudio.getState().diagram).not.toHaveProperty('allowed_modules');
  });

  it('edits allowed_hosts and secrets as lists the same way', () => {
    const diagram = { ...orderAgent(), allowed_hosts: ['api.shop.example'] };
    useStudio.setState({ diagram, saved: diagram, format, palette, links: keys, problems: [], compiled: null, registries: [] });
    render(<Panel />);
    const hosts = screen.getByTestId('field-allowed_hosts') as HTMLInputElement;
    expect(hosts.value).toBe('api.shop.example');
    fireEvent.change(hosts, { target: { value: 'api.shop.example, *.cdn.example, localhost:8080' } });
    expect(useStudio.getState().diagram?.allowed_hosts).toEqual(['api.shop.example', '*.cdn.example', 'localhost:8080']);
    fireEvent.change(screen.getByTestId('field-secrets'), { target: { value: 'SHOP_API_TOKEN' } });
    expect(useStudio.getState().diagram?.secrets).toEqual(['SHOP_API_TOKEN']);
    fireEvent.change(hosts, { target: { value: ' ' } });
    expect(useStudio.getState().diagram).not.toHaveProperty('allowed_hosts');
  });

  it("shows a problem of one entry at its list's field", () => {
    const diagram = { ...orderAgent(), allowed_hosts: ['api.shop.example', 'https://bad/'] };
    const problem = { file: 'd.yaml', line: 2, column: 25, message: "'https://bad/' is a URL: write the host alone", block: null,
      field: 'allowed_hosts.1', hint: null, code: 'value_error', severity: 'error' as const };
    useStudio.setState({ diagram, saved: diagram, format, palette, links: keys, problems: [problem], compiled: null, registries: [] });
    render(<Panel />);
    expect(screen.getByText(/is a URL: write the host alone/)).toBeTruthy();
  });
});
