/**
 * The drafts slice: unsaved edits kept in the browser's storage per file (offered back after a reload or a crash),
 * and the three-way merge of a conflict (yours, theirs, the base both started from) instead of overwrite-or-reload.
 * The base is the file as the page loaded it: the server remembers recent texts by hash.
 */
import type { StateCreator } from 'zustand';
import { api } from '../api/client';
import type { Diagram } from '../api/types';
import { mergeTexts, type MergedText } from '../model/merge';
import type { StudioState } from './index';

export interface Draft {
  /** the file's hash the edits started from */
  hash: string;
  diagram: Diagram | null;
  text: string | null;
  /** when it was kept (ms since the epoch) */
  at: number;
}

export interface Merge extends MergedText {
  base: string;
  yours: string;
  theirs: string;
  /** the file's hash now: the merged text is saved over it */
  theirsHash: string;
}

export interface DraftsSlice {
  /** a draft of the open file, kept from an earlier page, waiting for restore or discard */
  draftOffer: Draft | null;
  merge: Merge | null;
  merging: boolean;

  /** keep the open file's unsaved edits (after a pause; at once when `now`, before another file opens) */
  keepDraft: (now?: boolean) => void;
  forgetDraft: (path: string) => void;
  /** after a file opens: offer its draft if one was kept */
  offerDraft: (path: string) => void;
  restoreDraft: () => Promise<void>;
  dismissDraft: () => void;
  /** yours (the pane's text), theirs (the file now) and the base (the file as loaded, at `baseHash`) merged */
  startMerge: (baseHash: string, yours?: string) => Promise<void>;
  /** the merged text (edited where it conflicted) becomes the pane's, to be saved over theirs */
  acceptMerge: (text: string) => void;
  cancelMerge: () => void;
}

const DRAFT_DELAY_MS = 300;

function draftKey(root: string, path: string): string {
  return `diagrama:draft:${root}:${path}`;
}

export function readDraft(root: string, path: string): Draft | null {
  try {
    const raw = localStorage.getItem(draftKey(root, path));
    const draft = raw ? (JSON.parse(raw) as Draft) : null;
    return draft && typeof draft.hash === 'string' ? draft : null;
  } catch {
    return null;
  }
}

export const createDraftsSlice: StateCreator<StudioState, [], [], DraftsSlice> = (set, get) => {
  let timer: ReturnType<typeof setTimeout> | null = null;
  // drafts are kept per studio server (its address) and file: the session, which names the folder, may not have
  // come yet when a file opens
  const root = () => (typeof window === 'undefined' ? '' : window.location.host);

  return {
    draftOffer: null,
    merge: null,
    merging: false,

    keepDraft(now = false) {
      if (timer) clearTimeout(timer);
      const keep = () => {
        const s = get();
        if (!s.path || s.draftOffer || s.session?.read_only) return;
        const dirty = s.diagram !== s.saved || (s.sourceText !== null && s.savedText !== null && s.sourceText !== s.savedText);
        try {
          if (!dirty) localStorage.removeItem(draftKey(root(), s.path));
          else {
            const draft: Draft = { hash: s.hash, diagram: s.diagram, text: s.sourceFor === s.diagram ? s.sourceText : null, at: Date.now() };
            localStorage.setItem(draftKey(root(), s.path), JSON.stringify(draft));
          }
        } catch {
          // storage full or off: drafts are a convenience
        }
      };
      if (now) keep();
      else timer = setTimeout(keep, DRAFT_DELAY_MS);
    },

    forgetDraft(path) {
      if (timer) clearTimeout(timer);
      try {
        localStorage.removeItem(draftKey(root(), path));
      } catch {
        // nothing kept
      }
      if (get().draftOffer && get().path === path) set({ draftOffer: null });
    },

    offerDraft(path) {
      const draft = readDraft(root(), path);
      set({ draftOffer: draft && get().path === path ? draft : null });
    },

    async restoreDraft() {
      const { draftOffer: draft, path, hash } = get();
      if (!draft || !path) return;
      set({ draftOffer: null });
      if (draft.hash === hash) {
        if (draft.text !== null) get().typeSource(draft.text);
        else if (draft.diagram) get().adoptDiagram(draft.diagram);
        get().scheduleValidate();
        return;
      }
      // the file changed since the draft was kept: merge the draft with it
      let yours = draft.text;
      if (yours === null && draft.diagram) {
        try {
          yours = (await api.preview(path, draft.hash, draft.diagram)).text;
        } catch {
          yours = null;
        }
      }
      if (yours === null) {
        get().toast('the draft was kept before the file changed, and the studio cannot rebuild its text', 'warning');
        return;
      }
      await get().startMerge(draft.hash, yours);
    },

    dismissDraft() {
      const { path } = get();
      set({ draftOffer: null });
      if (path) get().forgetDraft(path);
    },

    async startMerge(baseHash, yoursText) {
      const { path, diagram, sourceText, sourceFor } = get();
      if (!path) return;
      set({ merging: true });
      try {
        const [base, theirs] = await Promise.all([api.source(path, baseHash), api.source(path)]);
        let yours = yoursText ?? (sourceFor === diagram ? sourceText : null);
        if (yours === null && diagram) yours = (await api.preview(path, baseHash, diagram)).text;
        const mine = yours ?? base.text;
        set({ merge: { base: base.text, yours: mine, theirs: theirs.text, theirsHash: theirs.hash, ...mergeTexts(mine, base.text, theirs.text) },
          merging: false });
      } catch (e) {
        set({ merging: false });
        get().toast(`cannot merge: ${e instanceof Error ? e.message : String(e)}`, 'error');
      }
    },

    acceptMerge(text) {
      const { merge } = get();
      if (!merge) return;
      set({ merge: null, conflict: null, hash: merge.theirsHash, savedText: merge.theirs });
      get().typeSource(text);
    },

    cancelMerge() {
      set({ merge: null });
    },
  };
};
