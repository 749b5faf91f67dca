import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import type { Diagram, Problem, Published } from '../api/types';
import { answer, fakeServer } from '../test/server';
import { useStudio } from '../store';
import { PublishButton, PublishStatus } from './PublishControl';

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const diagram = { diagram: 'greeter', blocks: [{ id: 'start', type: 'Start' }] } as unknown as Diagram;
const v1 = { number: 1, note: 'first', author: 'ana', time: 1_700_000_000, rollback_of: null, files: 1, live: true };
const never: Published = { state: 'never', live: null, versions: [], code_changes: [], published: null };
const draft: Published = { state: 'draft', live: 1, versions: [v1], code_changes: [], published: null };
const error = { severity: 'error', message: 'no block nowhere' } as Problem;

function open(hash: string, extra: Record<string, unknown> = {}) {
  useStudio.setState({ path: 'greeter.yaml', hash, diagram, saved: diagram, sourceText: null, savedText: null, problems: [],
    saving: false, validating: false, session: null, ...extra });
  render(<><PublishStatus /><PublishButton /></>);
}

describe('Publish in the header', () => {
  it('says never published, publishes with a note and then says published v1', async () => {
    const server = fakeServer({
      'GET /api/diagrams/greeter.yaml/published': () => never,
      'POST /api/diagrams/greeter.yaml/publish': () => ({ state: 'published', live: 1, versions: [v1], code_changes: [], published: 1 }),
    });
    open('h1');
    expect((await screen.findByTestId('publish-state')).textContent).toBe('never published');
    fireEvent.click(screen.getByRole('button', { name: 'Publish' }));
    fireEvent.change(screen.getByLabelText(/Publish the saved file as v1/), { target: { value: 'first' } });
    fireEvent.click(screen.getByRole('button', { name: 'Publish v1' }));
    await waitFor(() => expect(screen.getByTestId('publish-state').textContent).toBe('published v1'));
    expect(server.requests.find((r) => r.method === 'POST')?.body).toEqual({ note: 'first' });
  });

  it('asks again after a save (a new hash): the file is now a draft of the live version', async () => {
    let state: Published = { ...draft, state: 'published' };
    fakeServer({ 'GET /api/diagrams/greeter.yaml/published': () => state });
    open('h1');
    await waitFor(() => expect(screen.getByTestId('publish-state').textContent).toBe('published v1'));
    state = draft;
    useStudio.setState({ hash: 'h2' });
    await waitFor(() => expect(screen.getByTestId('publish-state').textContent).toBe('draft · live v1'));
  });

  it('is disabled with unsaved edits or errors', async () => {
    fakeServer({ 'GET /api/diagrams/greeter.yaml/published': () => draft });
    open('h1', { diagram: { ...diagram } });
    await screen.findByTestId('publish-state');
    const button = screen.getByRole('button', { name: 'Publish' }) as HTMLButtonElement;
    expect(button.disabled).toBe(true);
    expect(button.title).toMatch(/save first/);
    useStudio.setState({ diagram, problems: [error] });
    await waitFor(() => expect(button.title).toMatch(/error first/));
    expect(button.disabled).toBe(true);
  });

  it('lists the versions and rolls back', async () => {
    const v2 = { ...v1, number: 2, note: 'second' };
    const two: Published = { state: 'published', live: 2, versions: [v2, { ...v1, live: false }], code_changes: [], published: null };
    const server = fakeServer({
      'GET /api/diagrams/greeter.yaml/published': () => two,
      'POST /api/diagrams/greeter.yaml/rollback': () => answer(200, { state: 'draft', live: 3,
        versions: [{ ...v1, number: 3, note: 'rollback to v1', rollback_of: 1 }, { ...v2, live: false }, { ...v1, live: false }],
        code_changes: [], published: 3 }),
    });
    open('h1');
    fireEvent.click(await screen.findByTestId('publish-state'));
    const list = screen.getByRole('list', { name: 'Versions' });
    expect(list.textContent).toContain('v2');
    expect(list.textContent).toContain('second');
    fireEvent.click(screen.getByRole('button', { name: 'Roll back to v1' }));
    await waitFor(() => expect(screen.getByTestId('publish-state').textContent).toBe('draft · live v3'));
    expect(server.requests.find((r) => r.method === 'POST')?.body).toEqual({ version: 1 });
  });
});
