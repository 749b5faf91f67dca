/** The diagram's links and Loop bodies, read straight from the diagram JSON. */
import type { Compiled, Diagram, LinkKind } from '../api/types';
import { nextLinks } from './ops';

export interface EdgeSpec {
  id: string;
  source: string;
  target: string;
  kind: LinkKind;
  /** index in the source's `next` list (0 for error/body links) */
  index: number;
  /** how many `next` links the source has */
  count: number;
  when: string | null;
}

export function edgeId(kind: LinkKind, source: string, index: number): string {
  return kind === 'next' ? `next:${source}:${index}` : `${kind}:${source}`;
}

export function parseEdgeId(id: string): { kind: LinkKind; source: string; index: number } | null {
  const m = /^(next|error|body):(.+?)(?::(\d+))?$/.exec(id);
  if (!m) return null;
  return { kind: m[1] as LinkKind, source: m[2], index: m[3] ? Number(m[3]) : 0 };
}

/** Every link whose target exists, in evaluation order. */
export function diagramEdges(diagram: Diagram): EdgeSpec[] {
  const ids = new Set(diagram.blocks.map((b) => b.id));
  const edges: EdgeSpec[] = [];
  for (const b of diagram.blocks) {
    const links = nextLinks(b);
    links.forEach((l, i) => {
      if (typeof l.to === 'string' && ids.has(l.to)) {
        edges.push({ id: edgeId('next', b.id, i), source: b.id, target: l.to, kind: 'next', index: i, count: links.length,
          when: typeof l.when === 'string' && l.when !== '' ? l.when : null });
      }
    });
    if (typeof b.body === 'string' && ids.has(b.body)) {
      edges.push({ id: edgeId('body', b.id, 0), source: b.id, target: b.body, kind: 'body', index: 0, count: 1, when: null });
    }
    if (typeof b.on_error === 'string' && ids.has(b.on_error)) {
      edges.push({ id: edgeId('error', b.id, 0), source: b.id, target: b.on_error, kind: 'error', index: 0, count: 1, when: null });
    }
  }
  return edges;
}

/**
 * Members of a Loop's body: blocks reached from its `body` link without passing
 * through the Loop itself (the server's `compiled.bodies` wins when present).
 */
export function bodyMembers(diagram: Diagram, loop: string): string[] {
  const start = diagram.blocks.find((b) => b.id === loop)?.body;
  if (typeof start !== 'string') return [];
  const edges = diagramEdges(diagram);
  const seen = new Set<string>();
  const queue = [start];
  while (queue.length) {
    const id = queue.shift()!;
    if (id === loop || seen.has(id)) continue;
    if (!diagram.blocks.some((b) => b.id === id)) continue;
    seen.add(id);
    for (const e of edges) if (e.source === id) queue.push(e.target);
  }
  return [...seen];
}

export function loopBodies(diagram: Diagram, compiled: Compiled | null): Array<{ loop: string; members: string[] }> {
  const ids = new Set(diagram.blocks.map((b) => b.id));
  const fromServer = new Map((compiled?.bodies ?? []).map((b) => [b.loop, b.members.filter((m) => ids.has(m))]));
  const result: Array<{ loop: string; members: string[] }> = [];
  for (const b of diagram.blocks) {
    if (typeof b.body !== 'string') continue;
    const members = fromServer.get(b.id) ?? bodyMembers(diagram, b.id);
    if (members.length) result.push({ loop: b.id, members });
  }
  return result;
}
