/**
 * Where the cursor is in a block-style YAML text, for completion and hover over the diagram's JSON Schema: the
 * keys above it (`blocks`, an item, `with`), whether it is at a key or a value, and each level's sibling keys
 * (a block's `type`). This reads only indentation and `key:` shapes, never the data: the data is the server's
 * reader's (POST /api/parse); a text that is not block-style YAML here just gets no completion.
 */

/** A step of a path: a mapping key, or `[]` for an item of a sequence. */
export type Step = string;
export const ITEM: Step = '[]';

export interface YamlContext {
  /** the keys from the top down to the mapping the cursor is in */
  path: Step[];
  /** the keys written in the mappings on the way, with their plain values: `levels.get(n)` is the mapping that
   * `path.slice(0, n)` names (a block's keys, with its `type`, at the depth of its item) */
  levels: Map<number, Record<string, string>>;
  at: 'key' | 'value';
  /** at a value: its key */
  key?: string;
  /** the word being typed, and where it starts (an offset in the text) */
  prefix: string;
  from: number;
}

interface Line {
  /** the column of the line's content after any `- ` */
  col: number;
  /** the column of a leading `- `, or -1 */
  dash: number;
  key: string | null;
  /** the plain value after `key:` ('' when none: a nested mapping or list follows) */
  value: string;
  blank: boolean;
}

const KEY = /^(["']?)([\w.$-]+)\1\s*:(?:\s+|$)(.*)$/;

function readLine(text: string): Line {
  let col = 0;
  while (col < text.length && text[col] === ' ') col++;
  const rest = text.slice(col);
  if (!rest.trim() || rest.startsWith('#')) return { col, dash: -1, key: null, value: '', blank: true };
  let dash = -1;
  let body = rest;
  if (body.startsWith('- ') || body === '-') {
    dash = col;
    body = body.slice(2);
    const pad = body.length - body.trimStart().length;
    col += 2 + pad;
    body = body.trimStart();
  }
  const m = KEY.exec(body);
  return { col, dash, key: m ? m[2] : null, value: m ? m[3].replace(/\s+#.*$/, '').trim() : body, blank: false };
}

/** The keys written at column `col` in the mapping that starts at line `first` (scanning both ways from `at`). */
function levelKeys(lines: Line[], at: number, col: number): Record<string, string> {
  const keys: Record<string, string> = {};
  const take = (l: Line) => { if (l.key !== null && l.col === col) keys[l.key] = l.value; };
  for (let i = at; i >= 0; i--) {
    const l = lines[i];
    if (l.blank) continue;
    if (l.col < col) break;
    take(l);
    if (l.dash >= 0 && l.col === col) break; // the first key of this item
  }
  for (let i = at + 1; i < lines.length; i++) {
    const l = lines[i];
    if (l.blank) continue;
    if (l.col < col || (l.dash >= 0 && l.dash < col)) break;
    take(l);
  }
  return keys;
}

export function contextAt(text: string, offset: number): YamlContext {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  const all = text.split('\n');
  const row = before.split('\n').length - 1;
  const lines = all.map(readLine);
  const typed = before.slice(lineStart);
  const here = readLine(typed);
  const wordMatch = /[\w.$-]*$/.exec(typed);
  const prefix = wordMatch ? wordMatch[0] : '';
  const from = offset - prefix.length;
  const valueMatch = /^\s*(?:-\s+)?(["']?)([\w.$-]+)\1\s*:\s+(.*)$/.exec(typed);
  const at: 'key' | 'value' = valueMatch ? 'value' : 'key';
  // the column of the mapping the cursor is in: the typed key's, or (on a blank line) the cursor's
  let col = here.blank && !typed.includes('-') ? typed.length : here.col;
  const path: Step[] = [];
  const parents: Array<{ line: number; col: number; steps: number }> = [];
  // a key typed right after `- ` starts an item: its parent is the sequence's key
  let inItem = here.dash >= 0;
  let itemDash = here.dash;
  for (let i = row - 1; i >= 0; i--) {
    const l = lines[i];
    if (l.blank) continue;
    if (!inItem && l.dash >= 0 && l.col === col) {
      // the first key of the item this key belongs to
      inItem = true;
      itemDash = l.dash;
      continue;
    }
    if (inItem) {
      // the sequence's key: at the dash's column (`key:\n- a`) or left of it
      if (l.key !== null && l.value === '' && (l.col < itemDash || (l.col === itemDash && l.dash < 0))) {
        path.unshift(l.key, ITEM);
        col = l.col;
        parents.unshift({ line: i, col, steps: 2 });
        inItem = l.dash >= 0 && l.col > l.dash;
        itemDash = l.dash;
        continue;
      }
      if (l.col < itemDash) break;
      continue;
    }
    if (l.col < col && l.key !== null && l.value === '') {
      path.unshift(l.key);
      col = l.col;
      parents.unshift({ line: i, col, steps: 1 });
      if (l.dash >= 0) {
        inItem = true;
        itemDash = l.dash;
      }
    }
  }
  const levels = new Map<number, Record<string, string>>();
  let depth = 0;
  for (const p of parents) {
    levels.set(depth, levelKeys(lines, p.line, p.col));
    depth += p.steps;
  }
  levels.set(path.length, levelKeys(lines, row, here.blank && !typed.includes('-') ? typed.length : here.col));
  return { path, levels, at, key: valueMatch ? valueMatch[2] : undefined, prefix, from };
}
