import { describe, expect, it } from 'vitest';
import type { Published } from '../api/types';
import { publishBlocked, publishView } from './publish';

const version = (number: number, live: boolean) =>
  ({ number, note: '', author: 'ana', time: 1_700_000_000, rollback_of: null, files: 1, live });

function published(state: Published['state'], live: number | null, codeChanges: string[] = []): Published {
  const versions = live === null ? [] : Array.from({ length: live }, (_, i) => version(live - i, i === 0));
  return { state, live, versions, code_changes: codeChanges, published: null };
}

describe('the header publish state', () => {
  it('is unknown until the server answered', () => {
    expect(publishView(null)).toBeNull();
  });

  it('says never published, draft of the live version, or published', () => {
    expect(publishView(published('never', null))).toMatchObject({ label: 'never published', tone: 'never' });
    expect(publishView(published('draft', 3))).toMatchObject({ label: 'draft · live v3', tone: 'draft' });
    expect(publishView(published('published', 3))).toMatchObject({ label: 'published v3', tone: 'published' });
  });

  it('names code changed since publishing in its title', () => {
    expect(publishView(published('published', 1, ['handlers.py']))!.title).toContain('handlers.py');
    expect(publishView(published('published', 1))!.title).not.toContain('Code changed');
  });
});

describe('when Publish is disabled', () => {
  const ready = { dirty: false, errors: 0, readOnly: false, saving: false, validating: false };

  it('is enabled for a saved diagram without errors', () => {
    expect(publishBlocked(ready)).toBeNull();
  });

  it('is disabled with unsaved edits, errors, while saving or checking, and read-only', () => {
    expect(publishBlocked({ ...ready, dirty: true })).toMatch(/save first/);
    expect(publishBlocked({ ...ready, errors: 1 })).toMatch(/error first/);
    expect(publishBlocked({ ...ready, errors: 2 })).toMatch(/2 errors/);
    expect(publishBlocked({ ...ready, saving: true })).not.toBeNull();
    expect(publishBlocked({ ...ready, validating: true })).not.toBeNull();
    expect(publishBlocked({ ...ready, readOnly: true })).toMatch(/read-only/);
  });
});
