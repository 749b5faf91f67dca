import { describe, expect, it } from 'vitest';
import { hasKnowledge, indexedText, knowledgeNames, passageWhere, scoreText, snippet } from './knowledge';

describe('knowledge', () => {
  it("lists the diagram's own knowledge bases by name", () => {
    expect(knowledgeNames({ knowledge: { policies: { folder: 'kb' }, faq: { folder: 'faq' } } })).toEqual(['faq', 'policies']);
    expect(knowledgeNames({})).toEqual([]);
    expect(knowledgeNames(null)).toEqual([]);
    expect(hasKnowledge({ knowledge: { policies: { folder: 'kb' } }, blocks: [] })).toBe(true);
    expect(hasKnowledge({ blocks: [{ id: 's', type: 'Retrieve' }] })).toBe(true);
    expect(hasKnowledge({ blocks: [{ id: 's', type: 'Set' }] })).toBe(false);
  });

  it("says where a passage is: the file's line, a PDF's page, or the file", () => {
    expect(passageWhere({ source: 'refunds.md', line: 8, page: null })).toBe('refunds.md:8');
    expect(passageWhere({ source: 'terms.pdf', line: null, page: 3 })).toBe('terms.pdf p.3');
    expect(passageWhere({ source: 'rows.csv' })).toBe('rows.csv');
  });

  it('writes scores with two decimals and cuts long texts on one line', () => {
    expect(scoreText(0.5612)).toBe('0.56');
    expect(scoreText(null)).toBe('–');
    expect(snippet('a\n\nb  c')).toBe('a b c');
    expect(snippet('x'.repeat(10), 5)).toBe('xxxx…');
  });

  it('says when a base was indexed', () => {
    const now = 1_000_000_000_000;
    expect(indexedText(null, now)).toBe('not indexed yet');
    expect(indexedText(now / 1000 - 5, now)).toBe('indexed just now');
    expect(indexedText(now / 1000 - 600, now)).toBe('indexed 10 min ago');
    expect(indexedText(now / 1000 - 7200, now)).toBe('indexed 2 h ago');
    expect(indexedText(0, now)).toBe('indexed 1970-01-01');
  });
});
