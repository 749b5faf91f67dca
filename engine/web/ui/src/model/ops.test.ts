import { describe, expect, it } from 'vitest';
import {
  addBlock, addLink, clearOffset, isValidId, moveBlock, moveBlocks, nextLinks, normaliseNext, paste, removeBlocks, removeLink, renameBlock,
  renameKey, reorderLink, setField, setLink, setWhen, snakeCase, uniqueId,
} from './ops';
import { linkKeys } from './format';
import { format, keys, loopDiagram, orderAgent, palette } from '../test/fixtures';

const block = (d: ReturnType<typeof orderAgent>, id: string) => d.blocks.find((b) => b.id === id)!;

describe('ids', () => {
  it('derives snake_case ids from types', () => {
    expect(snakeCase('ClaudeRequest')).toBe('claude_request');
    expect(snakeCase('GroqChatRequest')).toBe('groq_chat_request');
    expect(snakeCase('Set')).toBe('set');
    expect(snakeCase('HTTPCall')).toBe('http_call');
  });
  it('numbers ids that are taken', () => {
    expect(uniqueId('claude_request', [])).toBe('claude_request');
    expect(uniqueId('claude_request', ['claude_request'])).toBe('claude_request_2');
    expect(uniqueId('claude_request', ['claude_request', 'claude_request_2'])).toBe('claude_request_3');
    expect(uniqueId('ask_2', ['ask', 'ask_2'])).toBe('ask_3');
  });
  it('validates ids', () => {
    expect(isValidId('ask_2')).toBe(true);
    expect(isValidId('2ask')).toBe(false);
    expect(isValidId('a b')).toBe(false);
  });
});

describe('addBlock', () => {
  it('adds a block with a unique id at a rounded position', () => {
    let d = orderAgent();
    const r1 = addBlock(d, 'ClaudeRequest', [10.4, 20.6]);
    expect(r1.id).toBe('claude_request');
    expect(block(r1.diagram, 'claude_request')).toEqual({ id: 'claude_request', type: 'ClaudeRequest', position: [10, 21] });
    d = r1.diagram;
    expect(addBlock(d, 'ClaudeRequest', [0, 0]).id).toBe('claude_request_2');
    expect(orderAgent().blocks).toHaveLength(5); // input untouched
  });
});

describe('moveBlock', () => {
  it('sets only position, rounded', () => {
    const d0 = orderAgent();
    const d = moveBlock(d0, 'ask', [100.7, -3.2]);
    const { position, ...rest } = block(d, 'ask');
    expect(position).toEqual([101, -3]);
    expect(rest).toEqual(block(d0, 'ask'));
    expect(Object.keys(block(d, 'ask'))).toEqual([...Object.keys(block(d0, 'ask')), 'position']);
    expect(d.blocks[0]).toBe(d0.blocks[0]); // other blocks: same objects
  });
  it('moves several blocks', () => {
    const d = moveBlocks(orderAgent(), { ask: [1, 2], done: [3, 4], ghost: [0, 0] });
    expect(block(d, 'ask').position).toEqual([1, 2]);
    expect(block(d, 'done').position).toEqual([3, 4]);
  });
});

describe('next normalisation', () => {
  it('writes one unconditional link as a string, more as a list', () => {
    expect(normaliseNext([], keys)).toBeUndefined();
    expect(normaliseNext([{ to: 'a' }], keys)).toBe('a');
    expect(normaliseNext([{ to: 'a', when: '{{ x }}' }], keys)).toEqual([{ to: 'a', when: '{{ x }}' }]);
    expect(normaliseNext([{ to: 'a' }, { to: 'b' }], keys)).toEqual([{ to: 'a' }, { to: 'b' }]);
    expect(normaliseNext([{ to: 'a', when: '' }], keys)).toBe('a');
  });
  it('reads strings and lists', () => {
    expect(nextLinks({ id: 'x', type: 'Set', next: 'a' }, keys)).toEqual([{ to: 'a' }]);
    expect(nextLinks({ id: 'x', type: 'Set', next: ['a', { to: 'b', when: 'w' }] as never }, keys)).toEqual([{ to: 'a' }, { to: 'b', when: 'w' }]);
    expect(nextLinks({ id: 'x', type: 'Set' }, keys)).toEqual([]);
  });
  it('addLink appends and normalises', () => {
    let d = addLink(orderAgent(), keys, 'done', 'start');
    expect(block(d, 'done').next).toBe('start');
    d = addLink(d, keys, 'done', 'ask');
    expect(block(d, 'done').next).toEqual([{ to: 'start' }, { to: 'ask' }]);
    expect(addLink(d, keys, 'done', 'ask')).toBe(d); // no duplicate
  });
  it('removeLink back to one link writes a string again', () => {
    const d = removeLink(orderAgent(), keys, 'ask', 'next', 0);
    expect(block(d, 'ask').next).toBe('done');
    expect(removeLink(d, keys, 'ask', 'next', 0).blocks[1]).not.toHaveProperty('next');
  });
  it('setWhen makes a list, clearing it makes a string', () => {
    let d = setWhen(orderAgent(), keys, 'dispatch', 0, '{{ ok }}');
    expect(block(d, 'dispatch').next).toEqual([{ to: 'ask', when: '{{ ok }}' }]);
    d = setWhen(d, keys, 'dispatch', 0, '  ');
    expect(block(d, 'dispatch').next).toBe('ask');
  });
  it('reorderLink moves a link in the evaluation order', () => {
    const d = reorderLink(orderAgent(), keys, 'ask', 1, -1);
    expect(block(d, 'ask').next).toEqual([{ to: 'done' }, { to: 'dispatch', when: '{{ called_tools | length > 0 }}' }]);
    expect(reorderLink(d, keys, 'ask', 0, -1)).toBe(d);
  });
  it('error links and a type\'s own ports', () => {
    let d = addLink(orderAgent(), keys, 'dispatch', 'apologise', 'error');
    expect(block(d, 'dispatch').on_error).toBe('apologise');
    d = setLink(d, 'dispatch', 'on_error', undefined);
    expect(block(d, 'dispatch')).not.toHaveProperty('on_error');
    d = addLink(loopDiagram(), keys, 'each', 'tag', 'body');
    expect(d.blocks[1].body).toBe('tag');
    expect(removeLink(d, keys, 'each', 'body').blocks[1]).not.toHaveProperty('body');
  });
  it('reads and writes links under the keys the server names, not under names of its own', () => {
    // a format whose links are written `then: [{go, if}]` and `rescue`: the same operations follow it
    const other = linkKeys({ ...format, links: { next: 'then', error: 'rescue', target: 'go', condition: 'if' } }, palette);
    const d = { diagram: 'x', blocks: [{ id: 'a', type: 'Set', then: 'b' }, { id: 'b', type: 'Set' }, { id: 'c', type: 'Set' }] };
    let e = addLink(d, other, 'a', 'c');
    expect(e.blocks[0].then).toEqual([{ go: 'b' }, { go: 'c' }]);
    e = setWhen(e, other, 'a', 1, '{{ x }}');
    expect(e.blocks[0].then).toEqual([{ go: 'b' }, { go: 'c', if: '{{ x }}' }]);
    e = addLink(renameBlock(e, other, 'c', 'z'), other, 'b', 'z', 'error');
    expect(e.blocks[0].then).toEqual([{ go: 'b' }, { go: 'z', if: '{{ x }}' }]);
    expect(e.blocks[1].rescue).toBe('z');
    expect(removeBlocks(e, other, ['z']).blocks).toEqual([{ id: 'a', type: 'Set', then: 'b' }, { id: 'b', type: 'Set' }]);
    expect(e.blocks.some((b) => 'next' in b || 'on_error' in b)).toBe(false);
  });
});

describe('renameBlock', () => {
  it('updates every next/to/on_error/body naming it', () => {
    let d = renameBlock(orderAgent(), keys, 'ask', 'ask_claude');
    expect(block(d, 'start').next).toBe('ask_claude');
    expect(block(d, 'dispatch').next).toBe('ask_claude');
    expect(block(d, 'ask_claude').label).toBe('Ask Claude');
    d = renameBlock(d, keys, 'apologise', 'sorry');
    expect(block(d, 'ask_claude').on_error).toBe('sorry');
    d = renameBlock(d, keys, 'done', 'finish');
    expect(block(d, 'ask_claude').next).toEqual([{ to: 'dispatch', when: '{{ called_tools | length > 0 }}' }, { to: 'finish' }]);
    const l = renameBlock(loopDiagram(), keys, 'classify', 'classify_it');
    expect(l.blocks[1].body).toBe('classify_it');
  });
  it('keeps key order and unknown keys', () => {
    const d = renameBlock(orderAgent(), keys, 'ask', 'q');
    expect(Object.keys(block(d, 'q'))).toEqual(Object.keys(block(orderAgent(), 'ask')));
    expect(block(d, 'q')['x-note']).toBe('keep me');
  });
  it('refuses taken or invalid ids', () => {
    expect(() => renameBlock(orderAgent(), keys, 'ask', 'done')).toThrow(/already exists/);
    expect(() => renameBlock(orderAgent(), keys, 'ask', '1x')).toThrow(/valid id/);
  });
});

describe('removeBlocks', () => {
  it('removes dangling links from other blocks', () => {
    const d = removeBlocks(orderAgent(), keys, ['dispatch', 'apologise']);
    expect(d.blocks.map((b) => b.id)).toEqual(['start', 'ask', 'done']);
    expect(block(d, 'ask').next).toBe('done');
    expect(block(d, 'ask')).not.toHaveProperty('on_error');
    expect(block(d, 'ask')['x-note']).toBe('keep me');
  });
  it('removes a body link', () => {
    const d = removeBlocks(loopDiagram(), keys, ['classify']);
    expect(d.blocks.find((b) => b.id === 'each')).not.toHaveProperty('body');
  });
});

describe('setField', () => {
  it('sets, replaces and removes values, removing empty containers', () => {
    let d = setField(orderAgent(), 'ask', ['with', 'temperature'], 0.5);
    expect(block(d, 'ask').with).toEqual({ model: 'claude-sonnet-5-5', request: '{{ question }}', temperature: 0.5 });
    d = setField(d, 'done', ['with', 'x'], 1);
    expect(block(d, 'done').with).toEqual({ x: 1 });
    d = setField(d, 'done', ['with', 'x'], undefined);
    expect(block(d, 'done')).not.toHaveProperty('with');
    d = setField(d, 'ask', ['label'], undefined);
    expect(block(d, 'ask')).not.toHaveProperty('label');
    expect(() => setField(d, 'ask', ['id'], 'x')).toThrow();
  });
  it('returns the same diagram when nothing changes', () => {
    const d = orderAgent();
    expect(setField(d, 'ask', ['with', 'temperature'], 0.2)).toBe(d);
  });
  it('renames a key in place', () => {
    const d = renameKey(setField(orderAgent(), 'ask', ['set', 'calls'], '{{ called_tools }}'), 'ask', 'set', 'answer', 'reply');
    expect(Object.keys(block(d, 'ask').set!)).toEqual(['reply', 'calls']);
  });
});

describe('paste', () => {
  it('gives fresh ids, offsets positions, keeps internal links and drops external ones', () => {
    const d0 = moveBlock(orderAgent(), 'ask', [100, 100]);
    const copied = [block(d0, 'ask'), block(d0, 'dispatch')];
    const { diagram, ids } = paste(d0, keys, copied, [40, 40], { dispatch: [300, 100] });
    expect(ids).toEqual(['ask_2', 'dispatch_2']);
    const ask2 = block(diagram, 'ask_2');
    const dispatch2 = block(diagram, 'dispatch_2');
    expect(ask2.position).toEqual([140, 140]);
    expect(dispatch2.position).toEqual([340, 140]);
    expect(ask2.next).toEqual([{ to: 'dispatch_2', when: '{{ called_tools | length > 0 }}' }]);
    expect(ask2).not.toHaveProperty('on_error');
    expect(dispatch2.next).toBe('ask_2');
    expect(block(diagram, 'ask').next).toEqual(block(d0, 'ask').next); // originals untouched
    // pasting twice keeps ids unique
    const again = paste(diagram, keys, copied, [80, 80]);
    expect(again.ids).toEqual(['ask_3', 'dispatch_3']);
  });
  it('puts pasted blocks where no block is (issue 29: they landed on the originals)', () => {
    const size = { width: 220, height: 76 };
    const originals: Array<[number, number]> = [[0, 0], [300, 0], [0, 116]];
    const offset = clearOffset([[0, 0], [300, 0]], originals, size);
    for (const [x, y] of [[0, 0], [300, 0]]) {
      for (const o of originals) {
        const overlaps = x + offset[0] < o[0] + size.width && o[0] < x + offset[0] + size.width
          && y + offset[1] < o[1] + size.height && o[1] < y + offset[1] + size.height;
        expect(overlaps).toBe(false);
      }
    }
  });
  it('deep-copies values', () => {
    const d0 = orderAgent();
    const { diagram } = paste(d0, keys, [block(d0, 'ask')], [0, 0]);
    (block(diagram, 'ask_2').with as Record<string, unknown>).model = 'other';
    expect(block(d0, 'ask').with!.model).toBe('claude-sonnet-5-5');
  });
});
