/** What a template field offers at the cursor: names in scope inside `{{ }}`, filters after `|`. */
import type { BlockType, Compiled, Diagram } from '../api/types';

export const JINJA_FILTERS = [
  'abs', 'attr', 'batch', 'capitalize', 'center', 'default', 'dictsort', 'escape', 'first', 'float', 'format',
  'groupby', 'indent', 'int', 'items', 'join', 'last', 'length', 'list', 'lower', 'map', 'max', 'min', 'replace',
  'reject', 'rejectattr', 'reverse', 'round', 'select', 'selectattr', 'slice', 'sort', 'string', 'striptags', 'sum',
  'title', 'tojson', 'trim', 'truncate', 'unique', 'upper', 'urlencode', 'wordcount',
];

export interface Completion {
  /** replace text[from, to) with the chosen option */
  from: number;
  to: number;
  prefix: string;
  kind: 'name' | 'filter';
  options: string[];
}

/** Whether `cursor` lies inside an open `{{ ... }}` expression; returns where the expression starts. */
export function expressionStart(text: string, cursor: number): number | null {
  const before = text.slice(0, cursor);
  const open = before.lastIndexOf('{{');
  if (open < 0) return null;
  const close = before.lastIndexOf('}}');
  if (close > open) return null;
  return open + 2;
}

function rank(options: string[], prefix: string): string[] {
  const p = prefix.toLowerCase();
  const unique = [...new Set(options)];
  const starts = unique.filter((o) => o.toLowerCase().startsWith(p)).sort((a, b) => a.localeCompare(b));
  const contains = p ? unique.filter((o) => !o.toLowerCase().startsWith(p) && o.toLowerCase().includes(p)).sort() : [];
  return [...starts, ...contains].filter((o) => o !== prefix);
}

/**
 * The completion at `cursor`, or null outside `{{ }}` / after a `.` / inside a string.
 * `names` are those in scope (compiled.scope[block][with|set|when]).
 */
export function completeAt(text: string, cursor: number, names: string[], extra: string[] = []): Completion | null {
  const start = expressionStart(text, cursor);
  if (start === null) return null;
  const expr = text.slice(start, cursor);
  // inside a quoted string?
  let quote: string | null = null;
  for (const ch of expr) {
    if (quote) { if (ch === quote) quote = null; } else if (ch === '"' || ch === "'") quote = ch;
  }
  if (quote) return null;
  const m = /[A-Za-z_][A-Za-z0-9_]*$/.exec(expr);
  const prefix = m ? m[0] : '';
  const tokenStart = cursor - prefix.length;
  const before = text.slice(start, tokenStart).replace(/\s+$/, '');
  if (before.endsWith('.')) return null; // attribute access: we do not know the fields
  if (/[0-9]$/.test(before) && !prefix) return null;
  const kind: Completion['kind'] = before.endsWith('|') ? 'filter' : 'name';
  const pool = kind === 'filter' ? JINJA_FILTERS : [...names, ...extra];
  const options = rank(pool, prefix);
  if (!options.length) return null;
  return { from: tokenStart, to: cursor, prefix, kind, options };
}

/** Inserts a chosen option; returns the new text and cursor. */
export function applyCompletion(text: string, c: Completion, option: string): { text: string; cursor: number } {
  const after = text.slice(c.to);
  // finish a just-opened "{{" with a closing "}}" when none follows
  const needsClose = !/^[^{]*}}/.test(after);
  const insert = option + (needsClose ? ' }}' : '');
  return { text: text.slice(0, c.from) + insert + after, cursor: c.from + option.length };
}

export type ScopeSlot = 'with' | 'set' | 'when';

/**
 * Names usable in a block's templates: the server's `compiled.scope`, or (before
 * the first validation answers) a guess from Start's inputs and variables, every
 * `set` name, and the block's own outputs.
 */
export function scopeNames(
  diagram: Diagram,
  compiled: Compiled | null,
  palette: BlockType[],
  blockId: string,
  slot: ScopeSlot,
): string[] {
  const fromServer = compiled?.scope?.[blockId]?.[slot];
  if (fromServer) return fromServer;
  const names = new Set<string>();
  for (const b of diagram.blocks) {
    if (b.type === 'Start') {
      for (const key of ['inputs', 'variables']) {
        const obj = b[key];
        if (obj && typeof obj === 'object') Object.keys(obj).forEach((k) => names.add(k));
      }
    }
    if (b.set && typeof b.set === 'object') Object.keys(b.set).forEach((k) => names.add(k));
  }
  const block = diagram.blocks.find((b) => b.id === blockId);
  if (block && slot !== 'with') {
    palette.find((t) => t.type === block.type)?.outputs.forEach((o) => names.add(o));
  }
  // a Loop's body sees item/index (a block linked through its type's own port)
  for (const b of diagram.blocks) {
    const t = palette.find((p) => p.type === b.type);
    if (t?.body_names.length && t.ports.some((port) => typeof b[port] === 'string')) t.body_names.forEach((n) => names.add(n));
  }
  return [...names];
}
