import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import type { KnowledgeListed, KnowledgeSearch, Step } from '../../api/types';
import { fakeServer } from '../../test/server';
import { useStudio } from '../../store';
import { KnowledgePanel } from './KnowledgePanel';
import { StepDetails } from './StepDetails';

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const listed: KnowledgeListed = {
  name: 'policies', folder: 'kb', declared_in: 'policy_bot.yaml', include: ['*.md'], chunk_size: 800, chunk_overlap: 120,
  files: 5, chunks: 12, indexed: null,
};
const found: KnowledgeSearch = {
  knowledge: 'policies', query: 'refund', took_ms: 1.25, passages: [{
    text: 'You may return any item within 30 days of delivery for a full refund.', source: 'refunds.md', line: 8, page: null,
    score: 0.5612, lexical: 0.49, embedding: 0.66, metadata: {},
  }],
};

describe('KnowledgePanel', () => {
  it('lists the bases, searches one and shows the passages with their scores', async () => {
    const server = fakeServer({
      'GET /api/diagrams/policy_bot.yaml/knowledge': () => [listed],
      'POST /api/diagrams/policy_bot.yaml/knowledge/policies/search': () => found,
    });
    useStudio.setState({ path: 'policy_bot.yaml' });
    render(<KnowledgePanel />);
    const table = await screen.findByRole('table', { name: 'Knowledge bases' });
    expect(table.textContent).toContain('policieskb512not indexed yet');
    fireEvent.change(screen.getByRole('searchbox', { name: 'Query' }), { target: { value: 'refund' } });
    fireEvent.click(screen.getByRole('button', { name: 'Search' }));
    const passages = await screen.findByRole('list', { name: 'Passages found' });
    expect(passages.textContent).toContain('refunds.md:8');
    expect(screen.getByTestId('passage-score').textContent).toBe('0.56');
    expect(passages.textContent).toContain('lex 0.49 · emb 0.66');
    const asked = server.requests.find((r) => r.method === 'POST');
    expect(asked?.body).toEqual({ query: 'refund', top_k: 5 });
  });

  it('says so when the diagram declares no base', async () => {
    fakeServer({ 'GET /api/diagrams/a.yaml/knowledge': () => [] });
    useStudio.setState({ path: 'a.yaml' });
    render(<KnowledgePanel />);
    await waitFor(() => expect(screen.getByText('This diagram declares no knowledge base.')).toBeTruthy());
  });
});

describe("StepDetails' passages", () => {
  it("shows a Retrieve step's passages: where, score, lexical and embedding parts, the text's start", () => {
    const step = {
      number: 2, block: 'search', block_type: 'Retrieve', offset_ms: 0.2, duration_ms: 1.1, status: 'succeeded', next: 'answer',
      via: 'next', inputs: {}, outputs: {}, set: {}, error: null, model: null, tokens: null, called_tools: [], payloads: [],
      scores: {}, score_parts: {}, failed_tools: [], http_calls: [], cost: null, usage: null, cached: false,
      passages: [{ knowledge: 'policies', query: 'refund', source: 'terms.pdf', line: null, page: 3, score: 0.4, lexical: 0.3,
        embedding: 0.55, text: 'Refunds are paid to the original card.' }],
    } satisfies Step;
    render(<StepDetails steps={[step]} />);
    const list = screen.getByRole('list', { name: 'Passages retrieved' });
    expect(list.textContent).toContain('terms.pdf p.3');
    expect(list.textContent).toContain('score 0.40');
    expect(list.textContent).toContain('Refunds are paid to the original card.');
    expect(screen.getByText(/policies · “refund”/)).toBeTruthy();
  });
});
