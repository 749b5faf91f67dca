/** The studio server's HTTP API, typed by its answers (types.ts, generated from the server's models). */
import type { AnswerRefused, Conflict, Diagram, ErrorAnswer, StudioApi } from './types';

/** An error answer from the server (`ErrorAnswer`, or a refused save's `Conflict`) with its status. */
export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly data: Partial<ErrorAnswer & Conflict & AnswerRefused>) {
    super(message);
  }
}

export function pageToken(doc: Document = document): string {
  return doc.querySelector<HTMLMetaElement>('meta[name="diagrama-token"]')?.content ?? '';
}

/** Diagram paths may contain folders; keep their slashes, encode each part. */
export function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

declare global {
  interface Window {
    /** what index.html started before this script loaded: GETs by URL (each is taken once), ELK's worker */
    __diagramaEarly?: { requests?: Record<string, Promise<Response>>; elkWorker?: Worker };
  }
}

/** The answer to a GET that index.html already started, if it did (once). */
function early(url: string): Promise<Response> | undefined {
  const started = typeof window === 'undefined' ? undefined : window.__diagramaEarly?.requests;
  const response = started?.[url];
  if (response) delete started[url];
  return response;
}

type Route = keyof StudioApi;

async function request<R extends Route>(route: R, url: string, body?: unknown): Promise<StudioApi[R]> {
  const method = route.slice(0, route.indexOf(' '));
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (method !== 'GET') {
    headers['Content-Type'] = 'application/json';
    headers['X-Diagrama-Token'] = pageToken();
  }
  const response = await ((method === 'GET' ? early(url) : undefined) ?? fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  }));
  const text = await response.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { error: text };
    }
  }
  if (!response.ok) {
    const obj = (data && typeof data === 'object' ? data : {}) as Partial<ErrorAnswer & Conflict & AnswerRefused>;
    const message = typeof obj.error === 'string' ? obj.error : `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, message, obj);
  }
  return data as StudioApi[R];
}

const d = (path: string) => `/api/diagrams/${encodePath(path)}`;

export const api = {
  session: () => request('GET /api/session', '/api/session'),
  format: () => request('GET /api/format', '/api/format'),
  blocks: () => request('GET /api/blocks', '/api/blocks'),
  diagrams: () => request('GET /api/diagrams', '/api/diagrams'),
  diagram: (path: string) => request('GET /api/diagrams/{path}', d(path)),
  hash: (path: string) => request('GET /api/diagrams/{path}/hash', `${d(path)}/hash`),
  save: (path: string, baseHash: string, diagram: Diagram) =>
    request('PUT /api/diagrams/{path}', d(path), { base_hash: baseHash, diagram }),
  validate: (path: string, diagram: Diagram) => request('POST /api/validate', '/api/validate', { diagram, path }),
  create: (path: string, copyOf?: string) =>
    request('POST /api/diagrams', '/api/diagrams', copyOf ? { path, copy_of: copyOf } : { path }),
  rename: (path: string, to: string) => request('POST /api/diagrams/{path}/rename', `${d(path)}/rename`, { to }),
  remove: (path: string) => request('DELETE /api/diagrams/{path}', d(path)),
  csv: (path: string, file: string) =>
    request('GET /api/diagrams/{path}/csv', `${d(path)}/csv?file=${encodeURIComponent(file)}`),
  startRun: (path: string, inputs: Record<string, unknown>, offline: boolean) =>
    request('POST /api/diagrams/{path}/runs', `${d(path)}/runs`, { inputs, offline }),
  /** the diagram's runs, newest first; `query` filters them on the server (status, since, until, block, error, text) */
  runs: (path: string, query = '') => request('GET /api/diagrams/{path}/runs', `${d(path)}/runs${query ? `?${query}` : ''}`),
  run: (runId: string, after: number) =>
    request('GET /api/runs/{run_id}', `/api/runs/${encodeURIComponent(runId)}?after=${after}`),
  /** a waiting run's answer (checked against its Wait's form: a 422 ApiError's data has the `problems`), or none
   * for an interrupted run: it goes on under its own id */
  resume: (runId: string, offline: boolean, answer?: unknown) =>
    request('POST /api/runs/{run_id}/resume', `/api/runs/${encodeURIComponent(runId)}/resume`,
      answer === undefined ? { offline } : { answer, offline }),
  /** a new run from `block` with the scope the run had there */
  replay: (runId: string, block: string, offline: boolean) =>
    request('POST /api/runs/{run_id}/replay', `/api/runs/${encodeURIComponent(runId)}/replay`, { block, offline }),
  /** one turn of a conversation with a diagram whose Start keeps `memory` */
  chat: (path: string, session: string, inputs: Record<string, unknown>, offline: boolean) =>
    request('POST /api/diagrams/{path}/chat', `${d(path)}/chat`, { session, inputs, offline }),
  chatSession: (session: string) =>
    request('GET /api/sessions/{session}', `/api/sessions/${encodeURIComponent(session)}`),
  /** the diagram's chat sessions in the store, newest first, each with its turns */
  sessions: (path: string) => request('GET /api/diagrams/{path}/sessions', `${d(path)}/sessions`),
  forgetSession: (session: string) =>
    request('DELETE /api/sessions/{session}', `/api/sessions/${encodeURIComponent(session)}`),
  /** the gallery: the README's examples, each with what it loads */
  examples: () => request('GET /api/examples', '/api/examples'),
  copyExample: (example: string, path: string) => request('POST /api/examples', '/api/examples', { example, path }),
  /** the diagram's pinned outputs (kept as <stem>.pins.scenario.yaml beside it) */
  pins: (path: string) => request('GET /api/diagrams/{path}/pins', `${d(path)}/pins`),
  /** pin a block's output (text, or a structured answer); `inputs`: the run's, for the pins scenario */
  pin: (path: string, block: string, output: unknown, inputs?: Record<string, unknown>) =>
    request('PUT /api/diagrams/{path}/pins/{block}', `${d(path)}/pins/${encodeURIComponent(block)}`, { output, inputs }),
  unpin: (path: string, block: string) =>
    request('DELETE /api/diagrams/{path}/pins/{block}', `${d(path)}/pins/${encodeURIComponent(block)}`, {}),
  /** the diagram's published versions (newest first), which is live, and whether the saved file is a draft of it */
  published: (path: string) => request('GET /api/diagrams/{path}/published', `${d(path)}/published`),
  /** pin the saved file as the next version, the one `diagrama api` serves (422 with the problems when it has errors) */
  publish: (path: string, note: string) => request('POST /api/diagrams/{path}/publish', `${d(path)}/publish`, { note }),
  /** serve version `version` again (a new version with its files) */
  rollback: (path: string, version: number) =>
    request('POST /api/diagrams/{path}/rollback', `${d(path)}/rollback`, { version }),
  saveScenario: (runId: string, path: string) =>
    request('POST /api/runs/{run_id}/scenario', `/api/runs/${encodeURIComponent(runId)}/scenario`, { path }),
  runScenarios: (folder: string, file?: string) =>
    request('POST /api/scenarios/run', '/api/scenarios/run', file ? { file } : { folder }),
  /** the file's text now, or as it was at `hash` (a conflict's base) */
  source: (path: string, hash?: string) =>
    request('GET /api/diagrams/{path}/source', `${d(path)}/source${hash ? `?hash=${encodeURIComponent(hash)}` : ''}`),
  saveSource: (path: string, baseHash: string, text: string) =>
    request('PUT /api/diagrams/{path}/source', `${d(path)}/source`, { base_hash: baseHash, text }),
  /** the text a save of `diagram` would write over `text` (the pane's), or over the file at `baseHash` */
  preview: (path: string, baseHash: string, diagram: Diagram, text?: string) =>
    request('POST /api/diagrams/{path}/preview', `${d(path)}/preview`,
      text === undefined ? { base_hash: baseHash, diagram } : { base_hash: baseHash, diagram, text }),
  /** a typed text read (and checked, unless `check` is false: the reading alone answers at once) */
  parse: (path: string, text: string, check = true) =>
    request('POST /api/parse', '/api/parse', check ? { path, text } : { path, text, check }),
  registries: () => request('GET /api/registries', '/api/registries'),
  versions: (path: string) => request('GET /api/diagrams/{path}/versions', `${d(path)}/versions`),
  version: (path: string, id: string) =>
    request('GET /api/diagrams/{path}/versions/{version}', `${d(path)}/versions/${encodeURIComponent(id)}`),
  schema: () => request('GET /api/schema', '/api/schema'),
  /** the diagram's recorded eval runs (`diagrama eval`), newest first */
  evals: (path: string) => request('GET /api/diagrams/{path}/evals', `${d(path)}/evals`),
  /** one recorded eval run with its report (each case's scores) */
  evalRecord: (path: string, evalId: string) =>
    request('GET /api/diagrams/{path}/evals/{eval_id}', `${d(path)}/evals/${encodeURIComponent(evalId)}`),
  /** the diagram's knowledge bases (its own `knowledge:` and its registry files'): folder, files, chunks, when indexed */
  knowledge: (path: string) => request('GET /api/diagrams/{path}/knowledge', `${d(path)}/knowledge`),
  /** the retrieval test: a base searched as its Retrieve block searches it */
  searchKnowledge: (path: string, name: string, query: string, topK: number) =>
    request('POST /api/diagrams/{path}/knowledge/{name}/search', `${d(path)}/knowledge/${encodeURIComponent(name)}/search`,
      { query, top_k: topK }),
  /** index the base again (only changed files are read) */
  indexKnowledge: (path: string, name: string) =>
    request('POST /api/diagrams/{path}/knowledge/{name}/index', `${d(path)}/knowledge/${encodeURIComponent(name)}/index`, {}),
  scenarios: () => request('GET /api/scenarios', '/api/scenarios'),
  /** an automatic layout a page stored for the layout graph with this SHA-256 (404 when none) */
  layout: (key: string) => request('GET /api/layouts/{key}', `/api/layouts/${key}`),
  storeLayout: (key: string, layout: unknown) => request('PUT /api/layouts/{key}', `/api/layouts/${key}`, { layout }),
};
