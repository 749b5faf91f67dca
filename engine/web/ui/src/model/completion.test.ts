import { describe, expect, it } from 'vitest';
import { applyCompletion, completeAt, expressionStart, scopeNames } from './completion';
import { orderAgent, palette } from '../test/fixtures';

const names = ['question', 'history', 'answer', 'calls'];
const at = (textWithCaret: string, extra: string[] = []) => {
  const cursor = textWithCaret.indexOf('|^');
  const text = textWithCaret.replace('|^', '');
  return completeAt(text, cursor, names, extra);
};

describe('completeAt', () => {
  it('offers nothing outside {{ }}', () => {
    expect(at('hello |^')).toBeNull();
    expect(at('{{ question }} and |^')).toBeNull();
    expect(expressionStart('a {{ b', 6)).toBe(4);
  });
  it('offers every name right after {{', () => {
    const c = at('Hi {{ |^');
    expect(c?.kind).toBe('name');
    expect(c?.options.sort()).toEqual([...names].sort());
    expect(c?.from).toBe(6);
  });
  it('filters by the typed prefix, prefix matches first', () => {
    const c = at('{{ hi|^ }}');
    expect(c?.options).toEqual(['history']);
    expect(c?.prefix).toBe('hi');
    expect(at('{{ swer|^')?.options).toEqual(['answer']);
  });
  it('offers jinja filters after |', () => {
    const c = at('{{ calls | le|^ }}');
    expect(c?.kind).toBe('filter');
    expect(c?.options[0]).toBe('length');
    expect(at('{{ x |^')?.kind).toBe('name');
    expect(at('{{ x | |^')?.options).toContain('tojson');
    expect(at('{{ x | |^')?.options).toContain('default');
  });
  it('offers nothing after a dot or inside a string', () => {
    expect(at('{{ usage.|^')).toBeNull();
    expect(at("{{ 'que|^")).toBeNull();
  });
  it('includes extra entries (e.g. tools groups)', () => {
    expect(at('{{ too|^', ["tools('orders')"])?.options).toEqual(["tools('orders')"]);
  });
  it('applies a completion and closes the braces', () => {
    const text = 'Q: {{ que';
    const c = completeAt(text, text.length, names)!;
    expect(applyCompletion(text, c, 'question')).toEqual({ text: 'Q: {{ question }}', cursor: 14 });
    const t2 = '{{ que }}';
    const c2 = completeAt(t2, 6, names)!;
    expect(applyCompletion(t2, c2, 'question').text).toBe('{{ question }}');
  });
});

describe('scopeNames', () => {
  it('uses compiled.scope when present', () => {
    const compiled = { links: [], bodies: [], levels: {}, scope: { ask: { with: ['question'], set: ['question', 'result'], when: ['result'] } } };
    expect(scopeNames(orderAgent(), compiled, palette, 'ask', 'with')).toEqual(['question']);
    expect(scopeNames(orderAgent(), compiled, palette, 'ask', 'when')).toEqual(['result']);
  });
  it('guesses before the server answers', () => {
    const w = scopeNames(orderAgent(), null, palette, 'ask', 'with');
    expect(w).toEqual(expect.arrayContaining(['question', 'history', 'answer']));
    expect(w).not.toContain('result');
    expect(scopeNames(orderAgent(), null, palette, 'ask', 'set')).toContain('result');
  });
});
