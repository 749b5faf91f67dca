/** The diagram's links and Loop bodies, read from the diagram being edited with the format's link keys. */
import type { Compiled, Diagram } from '../api/types';
import { blockLinks, NEXT, type LinkKeys, type LinkKind } from './format';

export interface EdgeSpec {
  id: string;
  source: string;
  target: string;
  kind: LinkKind;
  /** the block key the link is written under (its handle on the canvas) */
  key: string;
  /** index in the source's `next` list (0 for the others) */
  index: number;
  /** how many `next` links the source has */
  count: number;
  when: string | null;
}

export function edgeId(kind: LinkKind, source: string, index: number): string {
  return kind === NEXT ? `${NEXT}:${source}:${index}` : `${kind}:${source}`;
}

export function parseEdgeId(id: string): { kind: LinkKind; source: string; index: number } | null {
  const m = /^([A-Za-z_][\w-]*):(.+?)(?::(\d+))?$/.exec(id);
  if (!m) return null;
  return { kind: m[1], source: m[2], index: m[3] ? Number(m[3]) : 0 };
}

/** Every link whose target exists, each block's in order (`next` links as they are tried, ports, error link). */
export function diagramEdges(diagram: Diagram, keys: LinkKeys): EdgeSpec[] {
  const ids = new Set(diagram.blocks.map((b) => b.id));
  const edges: EdgeSpec[] = [];
  for (const b of diagram.blocks) {
    for (const l of blockLinks(b, keys)) {
      if (ids.has(l.target)) edges.push({ id: edgeId(l.kind, b.id, l.index), source: b.id, ...l });
    }
  }
  return edges;
}

/**
 * Members of a Loop's body: blocks reached from its port links without passing
 * through the Loop itself (the server's `compiled.bodies` wins when present).
 */
export function bodyMembers(diagram: Diagram, keys: LinkKeys, loop: string, edges = diagramEdges(diagram, keys)): string[] {
  const starts = edges.filter((e) => e.source === loop && e.kind !== NEXT && e.key !== keys.error).map((e) => e.target);
  const seen = new Set<string>();
  const queue = [...starts];
  while (queue.length) {
    const id = queue.shift()!;
    if (id === loop || seen.has(id)) continue;
    seen.add(id);
    for (const e of edges) if (e.source === id) queue.push(e.target);
  }
  return [...seen];
}

export function loopBodies(diagram: Diagram, compiled: Compiled | null, keys: LinkKeys): Array<{ loop: string; members: string[] }> {
  const ids = new Set(diagram.blocks.map((b) => b.id));
  const fromServer = new Map((compiled?.bodies ?? []).map((b) => [b.loop, b.members.filter((m) => ids.has(m))]));
  const edges = diagramEdges(diagram, keys);
  const loops = new Set(edges.filter((e) => e.kind !== NEXT && e.key !== keys.error).map((e) => e.source));
  const result: Array<{ loop: string; members: string[] }> = [];
  for (const b of diagram.blocks) {
    if (!loops.has(b.id)) continue;
    const members = fromServer.get(b.id) ?? bodyMembers(diagram, keys, b.id, edges);
    if (members.length) result.push({ loop: b.id, members });
  }
  return result;
}
