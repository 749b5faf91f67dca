/**
 * Find a block (Ctrl+K / Ctrl+F on the canvas): blocks matched by id, label, type and the text of their properties.
 * The index (each block's texts, lower-cased once) is made once per diagram, so a query over 300 blocks is a few
 * string searches each; every word of the query must be found, and the best place a block matched ranks it.
 */
import type { Block } from '../api/types';

export type MatchedIn = 'id' | 'label' | 'type' | 'property';

export interface BlockMatch {
  id: string;
  type: string;
  label: string;
  /** where the query's first word was found */
  matchedIn: MatchedIn;
  /** the property the text was found in (`with.request`), for a property match */
  field: string | null;
  /** a short piece of the matching text, for a property match */
  snippet: string | null;
}

interface Entry {
  block: Block;
  id: string;
  label: string;
  type: string;
  /** each property's path and text (strings, numbers, booleans), lower-cased beside the original */
  texts: Array<{ field: string; text: string; lower: string }>;
}

export type SearchIndex = Entry[];

const SKIPPED = new Set(['id', 'type', 'label', 'position']);
const MAX_TEXTS = 200;

function collect(value: unknown, field: string, out: Entry['texts']): void {
  if (out.length >= MAX_TEXTS) return;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    const text = String(value);
    out.push({ field, text, lower: text.toLowerCase() });
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => collect(v, `${field}[${i}]`, out));
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) collect(v, field ? `${field}.${k}` : k, out);
  }
}

let cached: { blocks: Block[]; index: SearchIndex } | null = null;

/** The index of `blocks` (the same array gives the same index: a diagram's blocks change only with an edit). */
export function searchIndex(blocks: Block[]): SearchIndex {
  if (cached?.blocks === blocks) return cached.index;
  const index = blocks.map((block) => {
    const texts: Entry['texts'] = [];
    for (const [k, v] of Object.entries(block)) if (!SKIPPED.has(k)) collect(v, k, texts);
    return {
      block, id: block.id.toLowerCase(), type: String(block.type).toLowerCase(),
      label: typeof block.label === 'string' ? block.label.toLowerCase() : '', texts,
    };
  });
  cached = { blocks, index };
  return index;
}

/** A rank for where `word` is in the entry (lower is better), or null when it is nowhere. */
function place(entry: Entry, word: string): { rank: number; matchedIn: MatchedIn; field: string | null; at: number } | null {
  if (entry.id === word) return { rank: 0, matchedIn: 'id', field: null, at: 0 };
  if (entry.id.startsWith(word)) return { rank: 1, matchedIn: 'id', field: null, at: 0 };
  if (entry.id.includes(word)) return { rank: 2, matchedIn: 'id', field: null, at: 0 };
  if (entry.label.includes(word)) return { rank: 3, matchedIn: 'label', field: null, at: 0 };
  if (entry.type.includes(word)) return { rank: 4, matchedIn: 'type', field: null, at: 0 };
  for (const t of entry.texts) {
    const at = t.lower.indexOf(word);
    if (at >= 0) return { rank: 5, matchedIn: 'property', field: t.field, at };
  }
  return null;
}

function snippet(text: string, at: number, length: number): string {
  const from = Math.max(0, at - 20);
  const to = Math.min(text.length, at + length + 40);
  return `${from > 0 ? '…' : ''}${text.slice(from, to)}${to < text.length ? '…' : ''}`.replace(/\s+/g, ' ');
}

/** The blocks matching every word of `query`, best first (then in the diagram's order), at most `limit`. */
export function searchBlocks(index: SearchIndex, query: string, limit = 50): BlockMatch[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return [];
  const found: Array<{ rank: number; order: number; match: BlockMatch }> = [];
  index.forEach((entry, order) => {
    let first: ReturnType<typeof place> = null;
    let rank = 0;
    for (const word of words) {
      const p = place(entry, word);
      if (!p) return;
      first ??= p;
      rank += p.rank;
    }
    if (!first) return;
    const text = first.field ? entry.texts.find((t) => t.field === first!.field)!.text : null;
    found.push({
      rank, order,
      match: {
        id: entry.block.id, type: String(entry.block.type), label: typeof entry.block.label === 'string' ? entry.block.label : '',
        matchedIn: first.matchedIn, field: first.field, snippet: text === null ? null : snippet(text, first.at, words[0].length),
      },
    });
  });
  found.sort((a, b) => a.rank - b.rank || a.order - b.order);
  return found.slice(0, limit).map((f) => f.match);
}

/** The match after (+1) or before (-1) `current`, wrapping around. */
export function stepMatch(count: number, current: number, by: 1 | -1): number {
  if (!count) return -1;
  return (current + by + count) % count;
}
