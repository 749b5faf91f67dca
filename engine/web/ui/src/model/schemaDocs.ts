/**
 * The diagram format's published JSON Schema (`diagrama schema`, GET /api/schema) read for the YAML pane: the keys
 * a mapping may have at a place in the file, the values a key takes (a block's `type`, an enum), and each one's
 * documentation, for completion and hover. A block's own keys come from its type's member of `blocks.items.oneOf`.
 */
import { ITEM, type YamlContext } from './yamlPath';

export type Schema = { [key: string]: unknown };

export interface Option {
  label: string;
  detail?: string;
  info?: string;
  /** what is inserted (a key gets its `: `) */
  apply: string;
}

function asSchema(value: unknown): Schema | null {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Schema) : null;
}

function deref(root: Schema, node: Schema | null, seen = 0): Schema | null {
  if (!node || seen > 20) return node;
  const ref = node.$ref;
  if (typeof ref === 'string' && ref.startsWith('#/')) {
    let target: unknown = root;
    for (const part of ref.slice(2).split('/')) target = asSchema(target)?.[part];
    return deref(root, asSchema(target), seen + 1);
  }
  for (const key of ['allOf', 'anyOf']) {
    const list = node[key];
    if (Array.isArray(list)) {
      // a templated value (`anyOf: [the value, a template string]`) or a single allOf: the part with structure
      const structured = list.map((m) => deref(root, asSchema(m), seen + 1)).find((m) => m && (m.properties || m.items || m.oneOf));
      if (structured) return { ...node, ...structured, description: node.description ?? structured.description };
    }
  }
  return node;
}

/** Each block type's member of `blocks.items.oneOf`, by its `type` constant. */
export function blockTypes(root: Schema): Map<string, Schema> {
  const members = asSchema(asSchema(asSchema(root.properties)?.blocks)?.items)?.oneOf;
  const found = new Map<string, Schema>();
  if (Array.isArray(members)) {
    for (const m of members) {
      const member = asSchema(m);
      const type = asSchema(asSchema(member?.properties)?.type)?.const;
      if (member && typeof type === 'string') found.set(type, member);
    }
  }
  return found;
}

/** The schema of the mapping at `path` (a block's own member when its `type` is written), or null. */
export function schemaAt(root: Schema, context: Pick<YamlContext, 'path' | 'levels'>): Schema | null {
  let node: Schema | null = root;
  context.path.forEach((step, i) => {
    node = deref(root, node);
    if (!node) return;
    if (step === ITEM) {
      node = deref(root, asSchema(node.items));
      const members = node?.oneOf;
      if (Array.isArray(members)) {
        const type = context.levels.get(i + 1)?.type;
        const member = type ? blockTypes(root).get(type.replace(/^["']|["']$/g, '')) : undefined;
        node = member ?? { properties: commonProperties(members.map(asSchema)) };
      }
    } else node = asSchema(asSchema(node.properties)?.[step]);
  });
  return deref(root, node);
}

/** The keys every member has (a block whose type is not written yet). */
function commonProperties(members: Array<Schema | null>): Schema {
  const first = asSchema(members[0]?.properties) ?? {};
  const common: Schema = {};
  for (const [key, value] of Object.entries(first)) {
    if (key !== 'type' && members.every((m) => key in (asSchema(m?.properties) ?? {}))) common[key] = value;
  }
  common.type = { description: 'the block type (what the block does)' };
  return common;
}

function describe(node: Schema | null): string | undefined {
  const d = node?.description;
  return typeof d === 'string' ? d : undefined;
}

/** What may be typed at the cursor: the keys of its mapping not written yet, or the values of its key. */
export function completions(root: Schema, context: YamlContext): Option[] {
  const mapping = schemaAt(root, context);
  if (context.at === 'key') {
    const props = asSchema(mapping?.properties) ?? {};
    const written = context.levels.get(context.path.length) ?? {};
    const required = new Set(Array.isArray(mapping?.required) ? mapping.required as string[] : []);
    return Object.entries(props)
      .filter(([key]) => !(key in written) || key === context.prefix)
      .map(([key, value]) => ({ label: key, detail: required.has(key) ? 'required' : undefined, info: describe(deref(root, asSchema(value))), apply: `${key}: ` }));
  }
  if (context.key === 'type' && context.path[context.path.length - 1] === ITEM) {
    return [...blockTypes(root)].map(([type, member]) => ({
      label: type, info: describe(asSchema(asSchema(member.properties)?.type)), apply: type,
    }));
  }
  const value = deref(root, asSchema(asSchema(mapping?.properties)?.[context.key ?? '']));
  const options: Option[] = [];
  const add = (v: unknown) => { if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') options.push({ label: String(v), apply: String(v) }); };
  if (Array.isArray(value?.enum)) value.enum.forEach(add);
  if (value?.const !== undefined) add(value.const);
  for (const m of Array.isArray(value?.anyOf) ? value.anyOf : []) {
    const member = deref(root, asSchema(m));
    if (Array.isArray(member?.enum)) member.enum.forEach(add);
    if (member?.const !== undefined) add(member.const);
  }
  if (value?.type === 'boolean') ['true', 'false'].forEach(add);
  return options;
}

/** The documentation of the key (or block type) at the cursor, or null. */
export function documentation(root: Schema, context: YamlContext, word: string): { title: string; text: string } | null {
  if (context.at === 'value' && context.key === 'type' && context.path[context.path.length - 1] === ITEM) {
    const member = blockTypes(root).get(word);
    const text = describe(asSchema(asSchema(member?.properties)?.type));
    return member ? { title: `${word} block`, text: text ?? '' } : null;
  }
  const mapping = schemaAt(root, context);
  const key = context.at === 'key' ? word : context.key ?? word;
  const node = deref(root, asSchema(asSchema(mapping?.properties)?.[key]));
  const text = describe(node);
  return node ? { title: key, text: text ?? '' } : null;
}
