/** Knowledge bases and their passages as the studio shows them: the Retrieve form's choices, a passage's place and
 * scores (the run view's Retrieve steps, the Knowledge tab's retrieval test). */
import type { Diagram } from '../api/types';

/** The knowledge bases the diagram declares itself, by name (its registry files' are the server's to list). */
export function knowledgeNames(diagram: Pick<Diagram, 'knowledge'> | null | undefined): string[] {
  const declared = diagram?.knowledge;
  return declared && typeof declared === 'object' ? Object.keys(declared).sort() : [];
}

/** Whether the diagram has knowledge bases to test: its own, or a Retrieve block's (a registry file's base). */
export function hasKnowledge(diagram: Pick<Diagram, 'knowledge' | 'blocks'> | null | undefined): boolean {
  return knowledgeNames(diagram).length > 0 || !!diagram?.blocks?.some((b) => b.type === 'Retrieve');
}

/** Where a passage is: `refunds.md:8`, `terms.pdf p.3`, or the file alone. */
export function passageWhere(p: { source: string; line?: number | null; page?: number | null }): string {
  if (p.page) return `${p.source} p.${p.page}`;
  if (p.line) return `${p.source}:${p.line}`;
  return p.source;
}

/** A score with two decimals, or a dash when the trace has none. */
export function scoreText(score: number | null | undefined): string {
  return typeof score === 'number' && Number.isFinite(score) ? score.toFixed(2) : '–';
}

/** A text's first `limit` characters on one line, an ellipsis when cut. */
export function snippet(text: string, limit = 200): string {
  const flat = text.split(/\s+/).filter(Boolean).join(' ');
  return flat.length <= limit ? flat : `${flat.slice(0, limit - 1)}…`;
}

/** When a base was indexed (seconds since the epoch), relative to `now` (ms): `just now`, `5 min ago`, `never`. */
export function indexedText(seconds: number | null, now: number = Date.now()): string {
  if (seconds === null) return 'not indexed yet';
  const ago = Math.max(0, now / 1000 - seconds);
  if (ago < 60) return 'indexed just now';
  if (ago < 3600) return `indexed ${Math.floor(ago / 60)} min ago`;
  if (ago < 86400) return `indexed ${Math.floor(ago / 3600)} h ago`;
  return `indexed ${new Date(seconds * 1000).toISOString().slice(0, 10)}`;
}
