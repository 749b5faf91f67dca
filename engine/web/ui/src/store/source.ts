/**
 * The source slice: the YAML text beside the canvas, kept in step with the document both ways. The page parses
 * no YAML: a text typed in the pane goes to the server's reader (POST /api/parse, debounced) and its diagram
 * becomes the document once it parses; an edit on the canvas asks the server for the text its save would write
 * (POST /api/diagrams/{path}/preview) over the pane's text, so the pane shows that exact change.
 */
import type { StateCreator } from 'zustand';
import { api } from '../api/client';
import type { BlockLines, Diagram } from '../api/types';
import type { StudioState } from './index';
import { keptLevels } from './sync';

export interface SourceSlice {
  /** the pane's text (null before the file's text is loaded) */
  sourceText: string | null;
  /** the file's text as last loaded or saved */
  savedText: string | null;
  /** the document the pane's text holds: the pane follows the canvas while the document is another one */
  sourceFor: Diagram | null;
  /** where each block is written in the pane's text */
  blockLines: Record<string, BlockLines>;
  /** the pane's text has edits the server has not read yet */
  parsing: boolean;
  paneOpen: boolean;
  /** a selection made in the pane (so the pane does not move its own cursor back) */
  selectionFromPane: boolean;

  loadSource: (path: string) => Promise<void>;
  /** the user typed in the pane */
  typeSource: (text: string) => void;
  /** the document changed elsewhere (canvas, forms, undo): ask for the text its save would write */
  followDocument: () => void;
  setPaneOpen: (open: boolean) => void;
  /** the pane's cursor is in block `id` (or in none) */
  cursorInBlock: (id: string | null) => void;
  /** a whole text (an older version) becomes the pane's, as if typed: an unsaved edit until saved */
  restoreText: (text: string) => Promise<void>;
}

/** How long typing pauses before the server reads the text. */
export const PARSE_DELAY_MS = 30;
/** How long canvas edits pause before the pane asks for their text. */
const PREVIEW_DELAY_MS = 80;
const PANE_KEY = 'diagrama:yaml-pane';

function storedPaneOpen(): boolean {
  try {
    return localStorage.getItem(PANE_KEY) === 'open';
  } catch {
    return false;
  }
}

export const createSourceSlice: StateCreator<StudioState, [], [], SourceSlice> = (set, get) => {
  let parseTimer: ReturnType<typeof setTimeout> | null = null;
  let parseSeq = 0;
  let previewTimer: ReturnType<typeof setTimeout> | null = null;
  let previewSeq = 0;

  async function parseNow(text: string) {
    const { path } = get();
    if (!path) return;
    const seq = ++parseSeq;
    const current = () => seq === parseSeq && get().sourceText === text;
    try {
      // the reading first (the canvas follows the typing at once), then the check (problems, the compiled picture)
      const read = await api.parse(path, text, false);
      if (!current()) return;
      set({ blockLines: read.blocks, parsing: false });
      if (read.diagram) get().adoptDiagram(read.diagram);
      if (read.checked) {
        set({ problems: read.problems, compiled: keptLevels(read.compiled, get().compiled), registries: read.registries, validating: false });
        return;
      }
      const r = await api.parse(path, text);
      if (!current()) return;
      set({ problems: r.problems, compiled: keptLevels(r.compiled, get().compiled), registries: r.registries, validating: false });
    } catch (e) {
      if (seq === parseSeq) set({ parsing: false });
      get().toast(`reading the YAML: ${e instanceof Error ? e.message : String(e)}`, 'error');
    }
  }

  return {
    sourceText: null,
    savedText: null,
    sourceFor: null,
    blockLines: {},
    parsing: false,
    paneOpen: storedPaneOpen(),
    selectionFromPane: false,

    async loadSource(path) {
      try {
        const r = await api.source(path);
        if (get().path !== path) return;
        set({ sourceText: r.text, savedText: r.text, sourceFor: get().diagram, blockLines: r.blocks });
      } catch (e) {
        get().toast(`cannot read the text of ${path}: ${e instanceof Error ? e.message : String(e)}`, 'error');
      }
    },

    typeSource(text) {
      if (text === get().sourceText) return;
      set({ sourceText: text, parsing: true, validating: true });
      if (parseTimer) clearTimeout(parseTimer);
      parseTimer = setTimeout(() => void parseNow(text), PARSE_DELAY_MS);
    },

    followDocument() {
      if (previewTimer) clearTimeout(previewTimer);
      previewTimer = setTimeout(async () => {
        const { diagram, sourceFor, path, hash, sourceText } = get();
        if (!diagram || !path || diagram === sourceFor || get().parsing) return;
        const seq = ++previewSeq;
        try {
          const r = await api.preview(path, hash, diagram, sourceText ?? undefined);
          if (seq !== previewSeq || get().diagram !== diagram || get().sourceText !== sourceText) return;
          set({ sourceText: r.text, sourceFor: diagram, blockLines: r.blocks });
        } catch {
          // the pane keeps its text; the next edit asks again (a save says what is wrong)
        }
      }, PREVIEW_DELAY_MS);
    },

    setPaneOpen(open) {
      if (open === get().paneOpen) return;
      set({ paneOpen: open });
      get().requestFit(); // the canvas is another width now
      const { path, sourceText } = get();
      if (open && path && sourceText === null) void get().loadSource(path);
      try {
        localStorage.setItem(PANE_KEY, open ? 'open' : 'closed');
      } catch {
        // remembering the pane is optional
      }
    },

    async restoreText(text) {
      const { path } = get();
      if (!path) return;
      // the file's text must be known first: the restored text is an edit of it (unsaved until saved)
      if (get().savedText === null) await get().loadSource(path);
      if (get().path !== path || get().savedText === null) return;
      get().setPaneOpen(true);
      get().typeSource(text);
    },

    cursorInBlock(id) {
      const { selection } = get();
      if (!id || (selection.length === 1 && selection[0] === id)) return;
      set({ selectionFromPane: true });
      get().select([id], null);
    },
  };
};
