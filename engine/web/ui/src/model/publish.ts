/**
 * The header's publish state (issue 42, item 5): what `diagrama api` serves is the diagram's live published version,
 * so the page says whether the file on disk is that version ("published v3"), differs from it ("draft · live v3"), or
 * was never published; and why Publish is not available now.
 */
import type { Published } from '../api/types';

export interface PublishView {
  label: string;
  tone: 'published' | 'draft' | 'never';
  title: string;
}

/** The pill beside "saved/valid"; null while the state is not known yet. */
export function publishView(published: Published | null): PublishView | null {
  if (!published) return null;
  const code = published.code_changes.length
    ? ` Code changed since it was published: ${published.code_changes.join(', ')} (served as it is now).` : '';
  if (published.state === 'never' || published.live === null) {
    return { label: 'never published', tone: 'never',
      title: 'Never published: the API serves the file as it is. Publish pins it as v1.' };
  }
  if (published.state === 'draft') {
    return { label: `draft · live v${published.live}`, tone: 'draft',
      title: `The saved file differs from v${published.live}, which the API serves: Publish to make it live.${code}` };
  }
  return { label: `published v${published.live}`, tone: 'published',
    title: `The saved file is v${published.live}, which the API serves.${code}` };
}

export interface PublishInputs {
  dirty: boolean;
  errors: number;
  readOnly: boolean;
  saving: boolean;
  validating: boolean;
}

/** Why Publish is disabled now (its button's title), or null when it can publish: it pins the saved file, so an
 * unsaved edit would not be in it, and a diagram with errors is refused by the server anyway. */
export function publishBlocked(s: PublishInputs): string | null {
  if (s.readOnly) return 'read-only session: publishing is disabled';
  if (s.saving) return 'saving…';
  if (s.dirty) return 'save first: Publish pins the saved file';
  if (s.validating) return 'checking the diagram…';
  if (s.errors) return `fix the diagram's ${s.errors === 1 ? 'error' : `${s.errors} errors`} first`;
  return null;
}
