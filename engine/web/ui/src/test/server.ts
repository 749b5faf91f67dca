/**
 * A fake studio server at the wire: the page's own client (api/client.ts) talks to it through a stubbed `fetch`,
 * as it talks to the real one, so the store's slices are tested without standing in for any of our own code.
 */
import { vi } from 'vitest';
import type { BlockType, Compiled, DiagramFile, Format, Session } from '../api/types';
import { format, orderAgent, palette } from './fixtures';

export interface Request {
  method: string;
  path: string;
  query: URLSearchParams;
  body: unknown;
}

/** What a handler answers: a JSON body (status 200), or a status with a body (`answer`). */
export type Handler = (request: Request) => unknown;

const ANSWER = Symbol('answer');
export function answer(status: number, body?: unknown): unknown {
  return { [ANSWER]: true, status, body };
}

/** Routes are `METHOD /path` (the path exactly, without the query). Unknown routes answer 404 as the server does. */
export function fakeServer(routes: Record<string, Handler>): { requests: Request[]; routes: Record<string, Handler> } {
  const requests: Request[] = [];
  vi.stubGlobal('fetch', async (input: string, init?: RequestInit) => {
    const url = new URL(input, 'http://127.0.0.1:8765');
    const method = init?.method ?? 'GET';
    const request = { method, path: decodeURIComponent(url.pathname), query: url.searchParams,
      body: init?.body ? JSON.parse(String(init.body)) : undefined };
    requests.push(request);
    const handler = routes[`${method} ${request.path}`];
    const result = handler ? await handler(request) : answer(404, { error: 'not found' });
    const { status, body } = result && typeof result === 'object' && ANSWER in result
      ? (result as unknown as { status: number; body: unknown }) : { status: 200, body: result };
    return new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  });
  return { requests, routes };
}

export const session: Session = { read_only: false, allow_online: false, root: 'diagrams', token: 't', token_header: 'x-diagrama-token' };
export const emptyCompiled: Compiled = { links: [], bodies: [], levels: {}, scope: {} };

/** The order agent with every block placed (so nothing waits for a layout). */
export function placedOrderAgent() {
  const d = orderAgent();
  return { ...d, blocks: d.blocks.map((b, i) => ({ ...b, position: [i * 300, 0] as [number, number] })) };
}

export function diagramFile(path: string, diagram = placedOrderAgent(), hash = 'h1'): DiagramFile {
  return { path, hash, diagram, problems: [], compiled: emptyCompiled, valid: true, registries: [] };
}

/** The routes every page load asks for: the session, the format, the palette. */
export function basics(extra: { palette?: BlockType[]; format?: Format; session?: Session } = {}): Record<string, Handler> {
  return {
    'GET /api/session': () => extra.session ?? session,
    'GET /api/format': () => extra.format ?? format,
    'GET /api/blocks': () => extra.palette ?? palette,
  };
}
