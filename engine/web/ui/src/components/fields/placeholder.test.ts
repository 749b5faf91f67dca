/** Issue 43, fix 8: the `{{ }}` button writes a template that validates, not an empty one. */
import { describe, expect, it } from 'vitest';
import { templatePlaceholder } from './SchemaField';

describe('the {{ }} button', () => {
  it('keeps the value as a literal, else takes a name in scope, else none', () => {
    expect(templatePlaceholder(0.3, ['question'])).toBe('{{ 0.3 }}');
    expect(templatePlaceholder('hi "you"', [])).toBe('{{ "hi \\"you\\"" }}');
    expect(templatePlaceholder(undefined, ['question', 'history'])).toBe('{{ question }}');
    expect(templatePlaceholder('', [])).toBe('{{ none }}');
    for (const t of [templatePlaceholder(undefined, []), templatePlaceholder(true, [])]) expect(t).not.toMatch(/\{\{\s*\}\}/);
  });
});
