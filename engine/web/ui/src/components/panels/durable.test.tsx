import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import type { RunData } from '../../api/types';
import { format, keys, palette } from '../../test/fixtures';
import { answer, fakeServer, placedOrderAgent, session } from '../../test/server';
import { useStudio } from '../../store';
import { ContextMenu } from '../canvas/ContextMenu';
import { forgetKeptState } from '../keptState';
import { WaitForm } from './WaitForm';

afterEach(() => {
  cleanup();
  forgetKeptState();
  vi.unstubAllGlobals();
  useStudio.setState({ run: null, answerProblems: null, contextMenu: null });
});

const form = { type: 'object', properties: { approved: { type: 'boolean' }, note: { type: 'string' } }, required: ['approved'] };

function shown(status: string, extra: Partial<RunData> = {}): RunData {
  return {
    run_id: 'r1', diagram: 'order_agent.yaml', status, errors: [], blocks: ['start', 'ask'], links: [], failed: null, passes: {},
    steps: [], events: [], count: 3, variables: null, waiting: null, checkpointed: true, replay_of: null, session: null, ...extra,
  };
}

describe('WaitForm', () => {
  it("draws the Wait's form from its schema, sends the answer, and lists what the server refuses", async () => {
    const server = fakeServer({ 'POST /api/runs/r1/resume': () => answer(422, { error: 'no', problems: ['note: too short'] }) });
    const waiting = { block: 'approve', prompt: 'Send it?', form, timeout: null, asked_at: 1 };
    useStudio.setState({ session, run: { runId: 'r1', data: shown('waiting', { waiting }), events: [] } });
    render(<WaitForm waiting={waiting} keptAs="r1:3" />);
    expect(screen.getByTestId('wait-prompt').textContent).toBe('approve asks: Send it?');
    fireEvent.click(screen.getByTestId('wait-field-approved'));
    fireEvent.change(screen.getByTestId('wait-field-note'), { target: { value: 'ok' } });
    fireEvent.click(screen.getByRole('button', { name: 'Send answer' }));
    await waitFor(() => expect(screen.getByRole('alert').textContent).toBe('note: too short'));
    expect(server.requests[0].body).toEqual({ answer: { approved: true, note: 'ok' }, offline: true });
  });
  it('keeps the answer typed so far while it is not shown (another tab), for that run and request only', () => {
    fakeServer({});
    const waiting = { block: 'approve', prompt: 'Send it?', form, timeout: null, asked_at: 1 };
    const first = render(<WaitForm waiting={waiting} keptAs="r1:3" />);
    fireEvent.click(screen.getByTestId('wait-field-approved'));
    fireEvent.change(screen.getByTestId('wait-field-note'), { target: { value: 'looks right' } });
    first.unmount();
    const again = render(<WaitForm waiting={waiting} keptAs="r1:3" />);
    expect((screen.getByTestId('wait-field-approved') as HTMLInputElement).checked).toBe(true);
    expect((screen.getByTestId('wait-field-note') as HTMLTextAreaElement).value).toBe('looks right');
    again.unmount();
    render(<WaitForm waiting={waiting} keptAs="r2:3" />);
    expect((screen.getByTestId('wait-field-approved') as HTMLInputElement).checked).toBe(false);
    expect((screen.getByTestId('wait-field-note') as HTMLTextAreaElement).value).toBe('');
  });
  it('takes JSON when the form is no object, and says so when the text is none', () => {
    const server = fakeServer({});
    render(<WaitForm waiting={{ block: 'w', prompt: 'Which?', form: null, timeout: 5, asked_at: 1 }} keptAs="r1:4" />);
    expect(screen.getByText(/Past its timeout/)).toBeTruthy();
    fireEvent.change(screen.getByTestId('wait-answer'), { target: { value: '{oops' } });
    fireEvent.click(screen.getByRole('button', { name: 'Send answer' }));
    expect(screen.getByRole('alert').textContent).toBe('answer: not JSON');
    expect(server.requests).toHaveLength(0);
  });
});

describe('the context menu\'s "Run from here"', () => {
  it('is off, saying why, until a durable past run that reached the block is shown; then it replays from it', async () => {
    const d = placedOrderAgent();
    const server = fakeServer({ 'POST /api/runs/r1/replay': () => ({ run_id: 'r2' }), 'GET /api/runs/r2': () => shown('running') });
    useStudio.setState({ session, format, palette, links: keys, path: 'order_agent.yaml', diagram: d, saved: d,
      contextMenu: { kind: 'block', id: 'ask', x: 10, y: 10 } });
    const { rerender } = render(<ContextMenu />);
    const item = () => screen.getByRole('menuitem', { name: 'Run from here' }) as HTMLButtonElement;
    expect(item().disabled).toBe(true);
    expect(item().title).toBe('open a past run first (Run tab)');
    useStudio.setState({ run: { runId: 'r1', data: shown('failed'), events: [] } });
    rerender(<ContextMenu />);
    expect(item().disabled).toBe(false);
    fireEvent.click(item());
    await waitFor(() => expect(useStudio.getState().run!.runId).toBe('r2'));
    expect(server.requests[0].body).toEqual({ block: 'ask', offline: true });
  });
});
