/**
 * A three-way merge of texts, line by line (node-diff3): what only one side changed is taken, what both changed
 * the same way is taken once, and what they changed differently is kept between git's conflict markers for the
 * user to settle in the merge view. And the finer rebase of keys typed in the YAML pane onto the document's text
 * (rebaseText).
 */
import { diff3Merge, diffIndices } from 'node-diff3';

export interface MergedText {
  /** the merged text; conflicting regions between `<<<<<<< yours`, `=======` and `>>>>>>> theirs` */
  result: string;
  conflicts: number;
}

export const CONFLICT_START = '<<<<<<< yours';
export const CONFLICT_SPLIT = '=======';
export const CONFLICT_END = '>>>>>>> theirs';

type Region = { ok?: string[]; conflict?: { a: string[]; o: string[]; b: string[] } };

export function mergeTexts(yours: string, base: string, theirs: string): MergedText {
  const lines = (text: string) => text.split('\n');
  const regions = diff3Merge(lines(yours), lines(base), lines(theirs), { excludeFalseConflicts: true }) as Region[];
  const out: string[] = [];
  let conflicts = 0;
  for (const region of regions) {
    if (region.ok) out.push(...region.ok);
    else if (region.conflict) {
      conflicts++;
      out.push(CONFLICT_START, ...region.conflict.a, CONFLICT_SPLIT, ...region.conflict.b, CONFLICT_END);
    }
  }
  return { result: out.join('\n'), conflicts };
}

/** Whether a text still holds conflict markers (a merge the user has not settled). */
export function hasConflictMarkers(text: string): boolean {
  return text.split('\n').some((line) => line === CONFLICT_START || line === CONFLICT_END);
}

/** One side's change of the base text: the characters [from, to) of the base replaced by `insert`. */
interface Hunk {
  from: number;
  to: number;
  insert: string;
  mine: boolean;
}

/** The text's lines, each with its line break (so that they join back to the text exactly). */
function linesOf(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** `text` with `changes` (ranges of it, in order, apart) made. */
function applied(text: string, changes: { from: number; to: number; insert: string }[]): string {
  let out = '';
  let at = 0;
  for (const c of changes) {
    out += text.slice(at, c.from) + c.insert;
    at = c.to;
  }
  return out + text.slice(at);
}

/**
 * Lines both sides changed are merged to the character while what differs in them is no longer than this (a
 * longest common subsequence of characters costs about 30 ms for 1,000 of them).
 */
const REFINE_CHARS = 1000;

/**
 * How many characters all three texts share at the start and at the end (no change of either side: only the rest
 * needs comparing), whole lines only when `lines`.
 */
function shared(base: string, mine: string, theirs: string, lines: boolean): [number, number] {
  let head = 0;
  while (head < base.length && base[head] === mine[head] && base[head] === theirs[head]) head++;
  if (lines && head > 0) head = base.lastIndexOf('\n', head - 1) + 1;
  let tail = 0;
  const room = Math.min(base.length, mine.length, theirs.length) - head;
  while (tail < room && base[base.length - 1 - tail] === mine[mine.length - 1 - tail]
    && base[base.length - 1 - tail] === theirs[theirs.length - 1 - tail]) tail++;
  // what is shared at the end starts a line in all three (it may follow a line break in one and not in another)
  const lineStart = (t: string) => t.length === tail || t[t.length - 1 - tail] === '\n';
  while (lines && tail > 0 && !(lineStart(base) && lineStart(mine) && lineStart(theirs))) tail--;
  return [head, tail];
}

/** `merge` of what differs between the three texts, with what they share around it. */
function aroundShared(base: string, mine: string, theirs: string, lines: boolean,
  merge: (base: string, mine: string, theirs: string) => MergedText | null): MergedText | null {
  const [head, tail] = shared(base, mine, theirs, lines);
  const middle = (t: string) => t.slice(head, t.length - tail);
  const merged = merge(middle(base), middle(mine), middle(theirs));
  return merged && { ...merged, result: base.slice(0, head) + merged.result + base.slice(base.length - tail) };
}

/**
 * Each side's changes of `base`, by lines or by characters, all made; lines both sides changed are merged again by
 * characters, and what still collides is kept between conflict markers. Changes of lines may touch (one side's
 * line, the other's next); changes of characters that touch collide (an insertion where the other side deleted a
 * line break would join two lines).
 */
function rebaseBy(base: string, mine: string, theirs: string, by: 'lines' | 'characters'): MergedText {
  const split = by === 'lines' ? linesOf : (t: string) => t.split('');
  const touching = by === 'characters';
  const pieces = split(base);
  const starts = [0];
  for (const piece of pieces) starts.push(starts[starts.length - 1] + piece.length);
  const changes = (other: string, mine: boolean): Hunk[] => {
    const parts = split(other);
    return diffIndices(pieces, parts).map((d) => ({ from: starts[d.buffer1[0]], to: starts[d.buffer1[0] + d.buffer1[1]],
      insert: parts.slice(d.buffer2[0], d.buffer2[0] + d.buffer2[1]).join(''), mine }));
  };
  // both sides' changes in the order of the base, mine first where both insert at one place
  const all = [...changes(mine, true), ...changes(theirs, false)]
    .sort((a, b) => a.from - b.from || a.to - b.to || Number(b.mine) - Number(a.mine));
  const made: { from: number; to: number; insert: string }[] = [];
  let conflicts = 0;
  for (let i = 0; i < all.length;) {
    // a stretch of changes that overlap one another (one side's own never do)
    const group = [all[i]];
    let end = all[i].to;
    for (i++; i < all.length && (all[i].from < end || (touching && all[i].from === end)); i++) {
      group.push(all[i]);
      end = Math.max(end, all[i].to);
    }
    if (group.length === 1) {
      made.push(group[0]);
      continue;
    }
    const from = group[0].from;
    const segment = base.slice(from, end);
    const side = (isMine: boolean) => applied(segment, group.filter((h) => h.mine === isMine)
      .map((h) => ({ ...h, from: h.from - from, to: h.to - from })));
    const yours = side(true);
    const theirsPart = side(false);
    const merged = yours === theirsPart ? { result: yours, conflicts: 0 } : by === 'lines' ? byCharacters(segment, yours, theirsPart) : null;
    if (merged && !merged.conflicts) {
      made.push({ from, to: end, insert: merged.result });
      continue;
    }
    conflicts++;
    const line = (t: string) => (t === '' || t.endsWith('\n') ? t : `${t}\n`);
    made.push({ from, to: end, insert: `${CONFLICT_START}\n${line(yours)}${CONFLICT_SPLIT}\n${line(theirsPart)}${CONFLICT_END}\n` });
  }
  return { result: applied(base, made), conflicts };
}

/** Lines both sides changed, merged character by character; null when they differ over too long a stretch. */
function byCharacters(base: string, mine: string, theirs: string): MergedText | null {
  return aroundShared(base, mine, theirs, false, (b, m, t) => (Math.max(b.length, m.length, t.length) > REFINE_CHARS
    ? null : rebaseBy(b, m, t, 'characters')));
}

/**
 * `mine`, a text typed over `base`, with the edits that made `theirs` of the same base: the YAML pane's typing put
 * into the document's text when the document changed elsewhere (a form, the canvas) while the keys were typed over
 * its older text. Each side's changes are found line by line and all made; lines both sides changed are merged
 * to the character (a keystroke and a form's edit on one line are nearly always apart there), and only what
 * overlaps there is kept between conflict markers, both sides of it: nothing is dropped. (mergeTexts, diff3's
 * merge, takes changes on neighbouring lines for a conflict.)
 */
export function rebaseText(base: string, mine: string, theirs: string): MergedText {
  if (mine === base || mine === theirs) return { result: theirs, conflicts: 0 };
  if (theirs === base) return { result: mine, conflicts: 0 };
  return aroundShared(base, mine, theirs, true, (b, m, t) => rebaseBy(b, m, t, 'lines'))!;
}
