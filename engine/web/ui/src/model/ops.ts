/**
 * Edit operations: small pure functions over the diagram JSON.
 *
 * Every operation returns a new diagram and leaves the keys it does not edit
 * exactly as they were (same values, same order), so that the server can write
 * a minimal YAML diff. Operations on links take the format's link keys
 * (model/format: from the server, never named here).
 */
import type { Block, Diagram } from '../api/types';
import {
  NEXT, keyOfKind, linkCondition, linkTarget, nextLinks, singleLinkKeys, type LinkKeys, type LinkKind, type WrittenLink,
} from './format';

export { nextLinks };
export type Position = [number, number];

// ---------------------------------------------------------------- helpers

const ID_RE = /^[A-Za-z_][A-Za-z0-9_-]*$/;

export function isValidId(id: string): boolean {
  return ID_RE.test(id);
}

/** `ClaudeRequest` → `claude_request`, `GroqChatRequest` → `groq_chat_request`. */
export function snakeCase(type: string): string {
  const s = type
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toLowerCase();
  return s && /^[a-z_]/.test(s) ? s : `block_${s}`;
}

/** `base` if free, else `base_2`, `base_3`, ... */
export function uniqueId(base: string, taken: Iterable<string>): string {
  const used = new Set(taken);
  if (!used.has(base)) return base;
  const stem = base.replace(/_\d+$/, '') || base;
  for (let n = 2; ; n++) {
    const candidate = `${stem}_${n}`;
    if (!used.has(candidate)) return candidate;
  }
}

export function findBlock(diagram: Diagram, id: string): Block | undefined {
  return diagram.blocks.find((b) => b.id === id);
}

function mapBlocks(diagram: Diagram, fn: (b: Block) => Block): Diagram {
  let changed = false;
  const blocks = diagram.blocks.map((b) => {
    const nb = fn(b);
    if (nb !== b) changed = true;
    return nb;
  });
  return changed ? { ...diagram, blocks } : diagram;
}

function updateBlock(diagram: Diagram, id: string, fn: (b: Block) => Block): Diagram {
  if (!findBlock(diagram, id)) throw new Error(`no block '${id}'`);
  return mapBlocks(diagram, (b) => (b.id === id ? fn(b) : b));
}

function withoutKey<T extends object>(obj: T, key: string): T {
  if (!(key in obj)) return obj;
  const copy = { ...obj } as Record<string, unknown>;
  delete copy[key];
  return copy as T;
}

// ---------------------------------------------------------------- next links

/**
 * Normalised `next`: none → key removed; one unconditional link → `next: id`;
 * several, or any with a condition (or other keys) → a list of `{to, when?}`.
 */
export function normaliseNext(links: WrittenLink[], keys: LinkKeys): string | WrittenLink[] | undefined {
  const cleaned = links.map((l) => (l[keys.condition] === undefined || l[keys.condition] === '' ? withoutKey(l, keys.condition) : l));
  if (cleaned.length === 0) return undefined;
  const only = cleaned[0];
  const target = linkTarget(only, keys);
  if (cleaned.length === 1 && target !== undefined && Object.keys(only).length === 1) return target;
  return cleaned;
}

export function writeNext(block: Block, keys: LinkKeys, links: WrittenLink[]): Block {
  const value = normaliseNext(links, keys);
  if (value === undefined) return withoutKey(block, keys.next);
  return { ...block, [keys.next]: value };
}

function retargetLink(link: WrittenLink, keys: LinkKeys, to: string): WrittenLink {
  return { ...link, [keys.target]: to };
}

// ---------------------------------------------------------------- operations

export interface AddResult {
  diagram: Diagram;
  id: string;
}

export function addBlock(diagram: Diagram, type: string, position: Position, id?: string): AddResult {
  const newId = uniqueId(id ?? snakeCase(type), diagram.blocks.map((b) => b.id));
  const block: Block = { id: newId, type, position: roundPosition(position) };
  return { diagram: { ...diagram, blocks: [...diagram.blocks, block] }, id: newId };
}

export function roundPosition(p: Position): Position {
  return [Math.round(p[0]), Math.round(p[1])];
}

/** Sets only `position`, as rounded integers. */
export function moveBlock(diagram: Diagram, id: string, position: Position): Diagram {
  const rounded = roundPosition(position);
  return updateBlock(diagram, id, (b) =>
    b.position && b.position[0] === rounded[0] && b.position[1] === rounded[1] ? b : { ...b, position: rounded },
  );
}

export function moveBlocks(diagram: Diagram, positions: Record<string, Position>): Diagram {
  return Object.entries(positions).reduce((d, [id, p]) => (findBlock(d, id) ? moveBlock(d, id, p) : d), diagram);
}

/** Removes blocks, and every link (`next`, `on_error`, a port) of the remaining blocks that names one of them. */
export function removeBlocks(diagram: Diagram, keys: LinkKeys, ids: Iterable<string>): Diagram {
  const gone = new Set(ids);
  if (gone.size === 0) return diagram;
  const named = (link: WrittenLink) => gone.has(linkTarget(link, keys) ?? '');
  const kept = diagram.blocks.filter((b) => !gone.has(b.id));
  const blocks = kept.map((b) => {
    let nb = b;
    const links = nextLinks(b, keys);
    if (links.some(named)) nb = writeNext(nb, keys, links.filter((l) => !named(l)));
    for (const key of singleLinkKeys(b, keys)) {
      const target = nb[key];
      if (typeof target === 'string' && gone.has(target)) nb = withoutKey(nb, key);
    }
    return nb;
  });
  return { ...diagram, blocks };
}

function retarget(block: Block, keys: LinkKeys, map: (id: string) => string | undefined): Block {
  let nb = block;
  const next = block[keys.next];
  const renamed = (id: unknown) => (typeof id === 'string' ? map(id) : undefined);
  // keep the written form: a plain id stays an id, a list stays a list (its bare ids bare)
  if (renamed(next) !== undefined) nb = { ...nb, [keys.next]: renamed(next) };
  else if (Array.isArray(next) && nextLinks(block, keys).some((l) => renamed(linkTarget(l, keys)) !== undefined)) {
    nb = { ...nb, [keys.next]: next.map((item: unknown) => {
      if (typeof item === 'string') return renamed(item) ?? item;
      const to = item && typeof item === 'object' ? renamed((item as WrittenLink)[keys.target]) : undefined;
      return to === undefined ? item : retargetLink(item as WrittenLink, keys, to);
    }) };
  }
  for (const key of singleLinkKeys(block, keys)) {
    const to = renamed(nb[key]);
    if (to !== undefined) nb = { ...nb, [key]: to };
  }
  return nb;
}

/** Renames a block and every link to it (`next` and each link's target, `on_error`, ports). */
export function renameBlock(diagram: Diagram, keys: LinkKeys, from: string, to: string): Diagram {
  if (from === to) return diagram;
  if (!isValidId(to)) throw new Error(`'${to}' is not a valid id: use letters, digits, _ and -, not starting with a digit`);
  if (findBlock(diagram, to)) throw new Error(`a block '${to}' already exists`);
  if (!findBlock(diagram, from)) throw new Error(`no block '${from}'`);
  const map = (id: string) => (id === from ? to : undefined);
  return mapBlocks(diagram, (b) => retarget(b.id === from ? { ...b, id: to } : b, keys, map));
}

/**
 * Sets (or, with `undefined`, removes) a value at a path inside a block, e.g.
 * `['with', 'temperature']`, `['label']`, `['set', 'answer']`. A container that
 * becomes empty is removed too.
 */
export function setField(diagram: Diagram, id: string, path: string[], value: unknown): Diagram {
  if (path.length === 0) throw new Error('empty path');
  if (path[0] === 'id') throw new Error('use renameBlock to change an id');
  return updateBlock(diagram, id, (b) => setIn(b, path, value) as Block);
}

function setIn(obj: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const [key, ...rest] = path;
  if (rest.length === 0) {
    if (value === undefined) return withoutKey(obj, key);
    if (Object.is(obj[key], value)) return obj;
    return { ...obj, [key]: value };
  }
  const child = obj[key];
  const base = child && typeof child === 'object' && !Array.isArray(child) ? (child as Record<string, unknown>) : {};
  const updated = setIn(base, rest, value);
  if (updated === base && child !== undefined) return obj;
  if (Object.keys(updated).length === 0) return withoutKey(obj, key);
  return { ...obj, [key]: updated };
}

/** Renames a key inside a mapping of a block (e.g. a `set` name), keeping its place. */
export function renameKey(diagram: Diagram, id: string, container: string, from: string, to: string): Diagram {
  if (from === to) return diagram;
  return updateBlock(diagram, id, (b) => {
    const obj = (b[container] ?? {}) as Record<string, unknown>;
    if (to in obj) throw new Error(`'${to}' is already there`);
    const entries = Object.entries(obj).map(([k, v]) => (k === from ? [to, v] : [k, v]));
    return { ...b, [container]: Object.fromEntries(entries) };
  });
}

/** A link of `kind` from `source`: a `next` link is appended; the error link or a port is set. */
export function addLink(diagram: Diagram, keys: LinkKeys, source: string, target: string, kind: LinkKind = NEXT): Diagram {
  if (!findBlock(diagram, target)) throw new Error(`no block '${target}'`);
  if (kind !== NEXT) return setLink(diagram, source, keyOfKind(kind, keys), target);
  return updateBlock(diagram, source, (b) => {
    const links = nextLinks(b, keys);
    if (links.some((l) => linkTarget(l, keys) === target && linkCondition(l, keys) === null)) return b; // already linked unconditionally
    return writeNext(b, keys, [...links, { [keys.target]: target }]);
  });
}

/** Removes the `index`-th `next` link, or the error link or a port. */
export function removeLink(diagram: Diagram, keys: LinkKeys, source: string, kind: LinkKind, index = 0): Diagram {
  if (kind !== NEXT) return setLink(diagram, source, keyOfKind(kind, keys), undefined);
  return updateBlock(diagram, source, (b) => writeNext(b, keys, nextLinks(b, keys).filter((_, i) => i !== index)));
}

export function setWhen(diagram: Diagram, keys: LinkKeys, source: string, index: number, when: string | undefined): Diagram {
  return updateBlock(diagram, source, (b) => {
    const links = nextLinks(b, keys);
    if (index < 0 || index >= links.length) throw new Error(`no link ${index} from '${source}'`);
    const cleaned = when === undefined || when.trim() === '' ? undefined : when;
    const updated = links.map((l, i) => (i !== index ? l
      : cleaned === undefined ? withoutKey(l, keys.condition) : { ...l, [keys.condition]: cleaned }));
    return writeNext(b, keys, updated);
  });
}

/** Moves the `index`-th link by `delta` places in the evaluation order. */
export function reorderLink(diagram: Diagram, keys: LinkKeys, source: string, index: number, delta: number): Diagram {
  return updateBlock(diagram, source, (b) => {
    const links = nextLinks(b, keys);
    const to = index + delta;
    if (index < 0 || index >= links.length || to < 0 || to >= links.length) return b;
    const copy = links.slice();
    const [moved] = copy.splice(index, 1);
    copy.splice(to, 0, moved);
    return writeNext(b, keys, copy);
  });
}

/** Sets (or, with `undefined`, removes) a key that holds one block id: the error link, or a port. */
export function setLink(diagram: Diagram, source: string, key: string, target: string | undefined): Diagram {
  return updateBlock(diagram, source, (b) =>
    target === undefined ? withoutKey(b, key) : b[key] === target ? b : { ...b, [key]: target });
}


export interface PasteResult {
  diagram: Diagram;
  ids: string[];
}

/**
 * Pastes copies of `blocks`: each gets a fresh unique id and its position
 * moved by `offset` (`positions` gives one for blocks laid out automatically);
 * links between pasted blocks follow the new ids, links to blocks outside the
 * copied set are dropped.
 */
export function paste(
  diagram: Diagram,
  keys: LinkKeys,
  blocks: Block[],
  offset: Position,
  positions: Record<string, Position> = {},
): PasteResult {
  const taken = new Set(diagram.blocks.map((b) => b.id));
  const rename = new Map<string, string>();
  for (const b of blocks) {
    const id = uniqueId(b.id, taken);
    taken.add(id);
    rename.set(b.id, id);
  }
  const inside = (id: string) => rename.get(id);
  const copies = blocks.map((b) => {
    const clone = structuredClone(b) as Block;
    let nb: Block = { ...clone, id: rename.get(b.id)! };
    const within = (l: WrittenLink) => inside(linkTarget(l, keys) ?? '');
    nb = writeNext(nb, keys, nextLinks(clone, keys).filter((l) => within(l) !== undefined).map((l) => retargetLink(l, keys, within(l)!)));
    for (const key of singleLinkKeys(clone, keys)) {
      const v = clone[key];
      if (typeof v === 'string') nb = inside(v) !== undefined ? { ...nb, [key]: inside(v) } : withoutKey(nb, key);
    }
    const base = b.position ?? positions[b.id] ?? [0, 0];
    nb.position = roundPosition([base[0] + offset[0], base[1] + offset[1]]);
    return nb;
  });
  return { diagram: { ...diagram, blocks: [...diagram.blocks, ...copies] }, ids: copies.map((b) => b.id) };
}

/**
 * Where pasted blocks go so that none lands on a block already there: the copies' own places moved down by
 * their group's height and a gap, then further down (and then right) until every copy is clear.
 */
export function clearOffset(copies: Position[], occupied: Position[], size: { width: number; height: number }, gap = 40): Position {
  if (!copies.length) return [0, 0];
  const top = Math.min(...copies.map((p) => p[1]));
  const bottom = Math.max(...copies.map((p) => p[1])) + size.height;
  const left = Math.min(...copies.map((p) => p[0]));
  const right = Math.max(...copies.map((p) => p[0])) + size.width;
  const hits = (a: Position, b: Position) =>
    a[0] < b[0] + size.width + gap / 2 && b[0] < a[0] + size.width + gap / 2 && a[1] < b[1] + size.height + gap / 2 && b[1] < a[1] + size.height + gap / 2;
  const clear = (dx: number, dy: number) => copies.every((c) => occupied.every((o) => !hits([c[0] + dx, c[1] + dy], o)));
  for (let column = 0; column < 20; column++) {
    const dx = column * (right - left + gap);
    for (let row = column === 0 ? 1 : 0; row < 40; row++) {
      const dy = row * (bottom - top + gap);
      if (clear(dx, dy)) return [dx, dy];
    }
  }
  return [right - left + gap, 0];
}
