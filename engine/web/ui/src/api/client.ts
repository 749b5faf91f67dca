import type {
  BlockType, CsvPreview, Diagram, DiagramFile, DiagramSummary, Problem, Compiled, RunData, RunSummary,
  SaveResult, ScenarioResult, Session,
} from './types';

/** An error answer from the server: `{"error": "..."}` with its status and whole body. */
export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly data: Record<string, unknown>) {
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

async function request<T>(method: string, url: string, body?: unknown): Promise<T> {
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
    const obj = (data && typeof data === 'object' ? data : {}) as Record<string, unknown>;
    const message = typeof obj.error === 'string' ? obj.error : `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, message, obj);
  }
  return data as T;
}

const d = (path: string) => `/api/diagrams/${encodePath(path)}`;

export const api = {
  session: () => request<Session>('GET', '/api/session'),
  blocks: () => request<BlockType[]>('GET', '/api/blocks'),
  diagrams: () => request<DiagramSummary[]>('GET', '/api/diagrams'),
  diagram: (path: string) => request<DiagramFile>('GET', d(path)),
  hash: (path: string) => request<{ hash: string }>('GET', `${d(path)}/hash`),
  save: (path: string, baseHash: string, diagram: Diagram) =>
    request<SaveResult>('PUT', d(path), { base_hash: baseHash, diagram }),
  validate: (path: string, diagram: Diagram) =>
    request<{ problems: Problem[]; compiled: Compiled | null }>('POST', '/api/validate', { diagram, path }),
  create: (path: string, copyOf?: string) =>
    request<{ path: string }>('POST', '/api/diagrams', copyOf ? { path, copy_of: copyOf } : { path }),
  rename: (path: string, to: string) => request<{ path: string }>('POST', `${d(path)}/rename`, { to }),
  remove: (path: string) => request<null>('DELETE', d(path)),
  csv: (path: string, file: string) => request<CsvPreview>('GET', `${d(path)}/csv?file=${encodeURIComponent(file)}`),
  startRun: (path: string, inputs: Record<string, unknown>, offline: boolean) =>
    request<{ run_id: string }>('POST', `${d(path)}/runs`, { inputs, offline }),
  runs: (path: string) => request<RunSummary[]>('GET', `${d(path)}/runs`),
  run: (runId: string, after: number) =>
    request<RunData>('GET', `/api/runs/${encodeURIComponent(runId)}?after=${after}`),
  saveScenario: (runId: string, path: string) =>
    request<{ path: string }>('POST', `/api/runs/${encodeURIComponent(runId)}/scenario`, { path }),
  runScenarios: (folder: string) => request<{ results: ScenarioResult[] }>('POST', '/api/scenarios/run', { folder }),
};
