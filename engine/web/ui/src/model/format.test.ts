import { describe, expect, it } from 'vitest';
import { blockLinks, ERROR, keyOfKind, kindOfKey, linkKeys, nextLinks, NEXT, portsOf } from './format';
import { loopBodies } from './graph';
import { format, keys, loopDiagram, palette } from '../test/fixtures';

describe('the format\'s link keys', () => {
  it('come from the format and each type\'s ports in the palette', () => {
    expect([keys.next, keys.error, keys.target, keys.condition]).toEqual(['next', 'on_error', 'to', 'when']);
    expect(portsOf({ type: 'Loop' }, keys)).toEqual(['body']);
    expect(portsOf({ type: 'NoSuchType' }, keys)).toEqual([]);
    expect(linkKeys(format, []).ports.size).toBe(0);
  });
  it('name a kind of link by its key and back: next, error, or the port itself', () => {
    expect([kindOfKey('next', keys), kindOfKey('on_error', keys), kindOfKey('body', keys)]).toEqual([NEXT, ERROR, 'body']);
    expect([keyOfKind(NEXT, keys), keyOfKind(ERROR, keys), keyOfKind('body', keys)]).toEqual(['next', 'on_error', 'body']);
  });
});

describe('a block\'s links', () => {
  it('are its next links in order (a bare id is one), its ports, then its error link', () => {
    const loop = loopDiagram().blocks[1];
    expect(blockLinks({ ...loop, on_error: 'report' }, keys).map((l) => [l.kind, l.key, l.target, l.index, l.count])).toEqual([
      ['next', 'next', 'report', 0, 1], ['body', 'body', 'classify', 0, 1], ['error', 'on_error', 'report', 0, 1]]);
    expect(nextLinks({ id: 'x', type: 'Set', next: ['a', { to: 'b', when: '' }] as never }, keys)).toEqual([{ to: 'a' }, { to: 'b', when: '' }]);
  });
  it('skip values that name no block id, and a key that is a port of another type only', () => {
    const block = { id: 'x', type: 'Set', next: [{ to: 5 }, { when: 'w' }, { to: 'b', when: '{{ ok }}' }] as never, on_error: ['y'] as never, body: 'z' };
    expect(blockLinks(block, keys).map((l) => [l.target, l.when])).toEqual([['b', '{{ ok }}']]);
  });
  it('give a Loop the blocks its body runs, reached through its port, when the server has not said yet', () => {
    expect(loopBodies(loopDiagram(), null, keys)).toEqual([{ loop: 'each', members: ['classify', 'tag'] }]);
    expect(loopBodies(loopDiagram(), null, linkKeys(format, palette.filter((t) => t.type !== 'Loop')))).toEqual([]);
  });
});
