import { describe, expect, it } from 'vitest';
import { answerFrom, initialTyped, waitFields } from './waitAnswer';

const approve = {
  type: 'object',
  properties: {
    approved: { type: 'boolean' },
    note: { type: 'string' },
    priority: { enum: ['low', 'high'] },
    copies: { type: 'integer', default: 1 },
    tags: { type: 'array', items: { type: 'string' } },
  },
  required: ['approved'],
};

describe("a Wait's answer", () => {
  it('reads the form as fields, required marked, defaults filled', () => {
    const fields = waitFields(approve);
    expect(fields.map((f) => [f.name, f.kind, f.required])).toEqual([
      ['approved', 'boolean', true], ['note', 'string', false], ['priority', 'enum', false], ['copies', 'integer', false],
      ['tags', 'json', false]]);
    expect(initialTyped(fields)).toEqual({ approved: false, note: '', priority: '', copies: '1', tags: '' });
  });
  it('sends what is typed as the schema types it, leaving empty fields out', () => {
    const fields = waitFields(approve);
    expect(answerFrom(fields, { approved: true, note: ' ', priority: 'high', copies: '3', tags: '["a"]' }))
      .toEqual({ answer: { approved: true, priority: 'high', copies: 3, tags: ['a'] }, problems: [] });
    expect(answerFrom(fields, { approved: false, note: 'later' }).answer).toEqual({ approved: false, note: 'later' });
  });
  it('names what cannot be sent: text that is no JSON or no number', () => {
    const fields = waitFields(approve);
    expect(answerFrom(fields, { approved: true, copies: 'three', tags: '[a' }).problems)
      .toEqual(['copies: not a number', 'tags: not JSON']);
  });
  it('takes any JSON when the form is no object (or there is none)', () => {
    expect(waitFields(null)).toEqual([]);
    expect(waitFields({ type: 'string' })).toEqual([]);
    expect(answerFrom([], { '': '"yes"' })).toEqual({ answer: 'yes', problems: [] });
    expect(answerFrom([], { '': '{' }).problems).toEqual(['answer: not JSON']);
  });
});
