/**
 * Which keys of a block link to other blocks, as the server says (GET /api/format, each block type's `ports` in
 * GET /api/blocks), and a block's links read with them. The page reads the links of the diagram it is editing
 * itself (it draws edits before they are saved), but never names a key of the file format on its own.
 */
import type { Block, BlockType, Format } from '../api/types';

/** A link's kind, as the compiled picture names them (`Link.kind`): `next`, `error`, or the port's own name. */
export type LinkKind = string;
export const NEXT: LinkKind = 'next';
export const ERROR: LinkKind = 'error';

export interface LinkKeys {
  /** the block key of the links tried in order: one id, or a list of links */
  next: string;
  /** in such a link: the key of the block it goes to, and of its condition */
  target: string;
  condition: string;
  /** the block key of the block that handles this block's errors */
  error: string;
  /** each block type's own link keys (a Loop's body), by type */
  ports: ReadonlyMap<string, readonly string[]>;
}

export function linkKeys(format: Format, palette: BlockType[]): LinkKeys {
  return {
    next: format.links.next,
    target: format.links.target,
    condition: format.links.condition,
    error: format.links.error,
    ports: new Map(palette.map((t) => [t.type, t.ports])),
  };
}

const NO_PORTS: readonly string[] = Object.freeze([]);

/** The type's own link keys of a block (none for a type the palette does not have). */
export function portsOf(block: Pick<Block, 'type'>, keys: LinkKeys): readonly string[] {
  return keys.ports.get(block.type) ?? NO_PORTS;
}

/** The block key a link of `kind` is written under. */
export function keyOfKind(kind: LinkKind, keys: LinkKeys): string {
  return kind === NEXT ? keys.next : kind === ERROR ? keys.error : kind;
}

/** The kind of link a block key (a handle on the canvas) makes. */
export function kindOfKey(key: string, keys: LinkKeys): LinkKind {
  return key === keys.next ? NEXT : key === keys.error ? ERROR : key;
}

/** The keys of a block that hold one block id each: its type's ports, then its error link. */
export function singleLinkKeys(block: Pick<Block, 'type'>, keys: LinkKeys): string[] {
  return [...portsOf(block, keys), keys.error];
}

/** Every key of a block that links somewhere. */
export function linkKeysOf(block: Pick<Block, 'type'>, keys: LinkKeys): string[] {
  return [keys.next, ...singleLinkKeys(block, keys)];
}

/** A link of the `next` list as written: an object with the target's and condition's keys (and any others). */
export type WrittenLink = Record<string, unknown>;

/** The `next` value as an ordered list of links (a bare id, alone or in the list, is one unconditional link). */
export function nextLinks(block: Block, keys: LinkKeys): WrittenLink[] {
  const next = block[keys.next];
  if (typeof next === 'string') return [{ [keys.target]: next }];
  if (!Array.isArray(next)) return [];
  return next.map((item: unknown) => (typeof item === 'string' ? { [keys.target]: item }
    : item && typeof item === 'object' ? (item as WrittenLink) : {}));
}

export function linkTarget(link: WrittenLink, keys: LinkKeys): string | undefined {
  const to = link[keys.target];
  return typeof to === 'string' ? to : undefined;
}

/** A link's condition, if it has one (an empty text is none). */
export function linkCondition(link: WrittenLink, keys: LinkKeys): string | null {
  const when = link[keys.condition];
  return typeof when === 'string' && when !== '' ? when : null;
}

/** One link of a block, whatever key it is written under. */
export interface BlockLink {
  kind: LinkKind;
  /** the block key it is written under (the handle it leaves from on the canvas) */
  key: string;
  target: string;
  /** place among the `next` links (0 for the others), and how many there are */
  index: number;
  count: number;
  when: string | null;
}

/** A block's links with a target id: `next` ones in the order they are tried, then its ports, then its error link. */
export function blockLinks(block: Block, keys: LinkKeys): BlockLink[] {
  const found: BlockLink[] = [];
  const next = nextLinks(block, keys);
  next.forEach((link, index) => {
    const target = linkTarget(link, keys);
    if (target !== undefined) {
      found.push({ kind: NEXT, key: keys.next, target, index, count: next.length, when: linkCondition(link, keys) });
    }
  });
  for (const key of singleLinkKeys(block, keys)) {
    const target = block[key];
    if (typeof target === 'string') found.push({ kind: kindOfKey(key, keys), key, target, index: 0, count: 1, when: null });
  }
  return found;
}
