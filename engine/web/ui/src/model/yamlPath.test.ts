import { describe, expect, it } from 'vitest';
import schemaJson from '../test/diagram.schema.json';
import { completions, documentation, type Schema } from './schemaDocs';
import { contextAt, ITEM } from './yamlPath';

const schema = schemaJson as Schema;
const TEXT = `diagram: demo
blocks:
  - id: start
    type: Start
    next: ask
  - id: ask
    type: ClaudeRequest
    with:
      model: claude-sonnet-5-5
      temp
    next: done
`;

const at = (text: string, marker: string) => text.indexOf(marker) + marker.length;

describe('contextAt', () => {
  it('names the keys above the cursor and the block it is in', () => {
    const c = contextAt(TEXT, at(TEXT, '      temp'));
    expect(c.path).toEqual(['blocks', ITEM, 'with']);
    expect(c.at).toBe('key');
    expect(c.prefix).toBe('temp');
    expect(c.levels.get(2)?.type).toBe('ClaudeRequest');
    expect(c.levels.get(3)).toHaveProperty('model');
  });

  it('knows a value from a key, and a new item from its dash', () => {
    const value = contextAt(TEXT, at(TEXT, '    type: Cla'));
    expect(value).toMatchObject({ path: ['blocks', ITEM], at: 'value', key: 'type', prefix: 'Cla' });
    const item = 'diagram: x\nblocks:\n- id: a\n  ty';
    expect(contextAt(item, item.length)).toMatchObject({ path: ['blocks', ITEM], at: 'key', prefix: 'ty' });
    const top = 'diagram: x\ndesc';
    expect(contextAt(top, top.length)).toMatchObject({ path: [], at: 'key', prefix: 'desc' });
  });
});

describe('completion and hover from the published schema', () => {
  it('offers a block type\'s own inputs, and the block types', () => {
    const inputs = completions(schema, contextAt(TEXT, at(TEXT, '      temp'))).map((o) => o.label);
    expect(inputs).toContain('temperature');
    expect(inputs).not.toContain('model'); // written already
    const types = completions(schema, contextAt(TEXT, at(TEXT, '    type: Cla'))).map((o) => o.label);
    expect(types).toEqual(expect.arrayContaining(['ClaudeRequest', 'Set', 'Start']));
    const blockKeys = completions(schema, contextAt('blocks:\n  - id: a\n    type: Set\n    ', 'blocks:\n  - id: a\n    type: Set\n    '.length));
    expect(blockKeys.map((o) => o.label)).toEqual(expect.arrayContaining(['set', 'next', 'on_error', 'error_level']));
    expect(blockKeys.find((o) => o.label === 'next')?.apply).toBe('next: ');
  });

  it('documents keys and block types', () => {
    const model = documentation(schema, contextAt(TEXT, at(TEXT, '      mod')), 'model');
    expect(model?.text).toContain("the vendor's model id");
    const type = documentation(schema, contextAt(TEXT, at(TEXT, '    type: ClaudeRequest')), 'ClaudeRequest');
    expect(type?.title).toBe('ClaudeRequest block');
    expect(type?.text.length).toBeGreaterThan(5);
  });
});
