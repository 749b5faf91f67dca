import { describe, expect, it } from 'vitest';
import {
  addBlock, addLink, isValidId, moveBlock, moveBlocks, nextLinks, normaliseNext, paste, removeBlocks, removeLink, renameBlock,
  renameKey, reorderLink, setBody, setErrorLink, setField, setWhen, snakeCase, uniqueId,
} from './ops';
import { loopDiagram, orderAgent } from '../test/fixtures';

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
    expect(normaliseNext([])).toBeUndefined();
    expect(normaliseNext([{ to: 'a' }])).toBe('a');
    expect(normaliseNext([{ to: 'a', when: '{{ x }}' }])).toEqual([{ to: 'a', when: '{{ x }}' }]);
    expect(normaliseNext([{ to: 'a' }, { to: 'b' }])).toEqual([{ to: 'a' }, { to: 'b' }]);
    expect(normaliseNext([{ to: 'a', when: '' }])).toBe('a');
  });
  it('reads strings and lists', () => {
    expect(nextLinks({ id: 'x', type: 'Set', next: 'a' })).toEqual([{ to: 'a' }]);
    expect(nextLinks({ id: 'x', type: 'Set', next: ['a', { to: 'b', when: 'w' }] })).toEqual([{ to: 'a' }, { to: 'b', when: 'w' }]);
    expect(nextLinks({ id: 'x', type: 'Set' })).toEqual([]);
  });
  it('addLink appends and normalises', () => {
    let d = addLink(orderAgent(), 'done', 'start');
    expect(block(d, 'done').next).toBe('start');
    d = addLink(d, 'done', 'ask');
    expect(block(d, 'done').next).toEqual([{ to: 'start' }, { to: 'ask' }]);
    expect(addLink(d, 'done', 'ask')).toBe(d); // no duplicate
  });
  it('removeLink back to one link writes a string again', () => {
    const d = removeLink(orderAgent(), 'ask', 'next', 0);
    expect(block(d, 'ask').next).toBe('done');
    expect(removeLink(d, 'ask', 'next', 0).blocks[1]).not.toHaveProperty('next');
  });
  it('setWhen makes a list, clearing it makes a string', () => {
    let d = setWhen(orderAgent(), 'dispatch', 0, '{{ ok }}');
    expect(block(d, 'dispatch').next).toEqual([{ to: 'ask', when: '{{ ok }}' }]);
    d = setWhen(d, 'dispatch', 0, '  ');
    expect(block(d, 'dispatch').next).toBe('ask');
  });
  it('reorderLink moves a link in the evaluation order', () => {
    const d = reorderLink(orderAgent(), 'ask', 1, -1);
    expect(block(d, 'ask').next).toEqual([{ to: 'done' }, { to: 'dispatch', when: '{{ called_tools | length > 0 }}' }]);
    expect(reorderLink(d, 'ask', 0, -1)).toBe(d);
  });
  it('error and body ports', () => {
    let d = addLink(orderAgent(), 'dispatch', 'apologise', 'error');
    expect(block(d, 'dispatch').on_error).toBe('apologise');
    d = setErrorLink(d, 'dispatch', undefined);
    expect(block(d, 'dispatch')).not.toHaveProperty('on_error');
    d = setBody(loopDiagram(), 'each', 'tag');
    expect(d.blocks[1].body).toBe('tag');
    expect(removeLink(d, 'each', 'body').blocks[1]).not.toHaveProperty('body');
  });
});

describe('renameBlock', () => {
  it('updates every next/to/on_error/body naming it', () => {
    let d = renameBlock(orderAgent(), 'ask', 'ask_claude');
    expect(block(d, 'start').next).toBe('ask_claude');
    expect(block(d, 'dispatch').next).toBe('ask_claude');
    expect(block(d, 'ask_claude').label).toBe('Ask Claude');
    d = renameBlock(d, 'apologise', 'sorry');
    expect(block(d, 'ask_claude').on_error).toBe('sorry');
    d = renameBlock(d, 'done', 'finish');
    expect(block(d, 'ask_claude').next).toEqual([{ to: 'dispatch', when: '{{ called_tools | length > 0 }}' }, { to: 'finish' }]);
    const l = renameBlock(loopDiagram(), 'classify', 'classify_it');
    expect(l.blocks[1].body).toBe('classify_it');
  });
  it('keeps key order and unknown keys', () => {
    const d = renameBlock(orderAgent(), 'ask', 'q');
    expect(Object.keys(block(d, 'q'))).toEqual(Object.keys(block(orderAgent(), 'ask')));
    expect(block(d, 'q')['x-note']).toBe('keep me');
  });
  it('refuses taken or invalid ids', () => {
    expect(() => renameBlock(orderAgent(), 'ask', 'done')).toThrow(/already exists/);
    expect(() => renameBlock(orderAgent(), 'ask', '1x')).toThrow(/valid id/);
  });
});

describe('removeBlocks', () => {
  it('removes dangling links from other blocks', () => {
    const d = removeBlocks(orderAgent(), ['dispatch', 'apologise']);
    expect(d.blocks.map((b) => b.id)).toEqual(['start', 'ask', 'done']);
    expect(block(d, 'ask').next).toBe('done');
    expect(block(d, 'ask')).not.toHaveProperty('on_error');
    expect(block(d, 'ask')['x-note']).toBe('keep me');
  });
  it('removes a body link', () => {
    const d = removeBlocks(loopDiagram(), ['classify']);
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
    const { diagram, ids } = paste(d0, copied, [40, 40], { dispatch: [300, 100] });
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
    const again = paste(diagram, copied, [80, 80]);
    expect(again.ids).toEqual(['ask_3', 'dispatch_3']);
  });
  it('deep-copies values', () => {
    const d0 = orderAgent();
    const { diagram } = paste(d0, [block(d0, 'ask')], [0, 0]);
    (block(diagram, 'ask_2').with as Record<string, unknown>).model = 'other';
    expect(block(d0, 'ask').with!.model).toBe('claude-sonnet-5-5');
  });
});
