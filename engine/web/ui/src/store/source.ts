/**
 * The source slice: the YAML text beside the canvas, kept in step with the document both ways. The page parses
 * no YAML: a text typed in the pane goes to the server's reader (POST /api/parse, debounced) and its diagram
 * becomes the document once it parses; an edit on the canvas asks the server for the text its save would write
 * (POST /api/diagrams/{path}/preview) over the pane's text, so the pane shows that exact change.
 *
 * The pane's text always shows the document, and no keystroke is lost on either side: the pane opens on the
 * document's text (with the edits made while it was closed), not the file's; keys typed while a canvas edit's
 * text is on its way were typed over a text without that edit, so their reading is not taken (it would undo the
 * edit): they are put into the edit's text when it comes (model/merge's rebaseText), and that text is read.
 */
import type { StateCreator } from 'zustand';
import { api } from '../api/client';
import type { BlockLines, Diagram } from '../api/types';
import { rebaseText } from '../model/merge';
import type { StudioState } from './index';
import { keptLevels } from './sync';

export interface SourceSlice {
  /** the pane's text (null before the file's text is loaded) */
  sourceText: string | null;
  /** the file's text as last loaded or saved */
  savedText: string | null;
  /** the document the pane's text holds: the pane follows the canvas while the document is another one */
  sourceFor: Diagram | null;
  /**
   * the text that holds `sourceFor` (as last read, loaded or followed): the pane's text less what was typed since.
   * A canvas edit's text is asked over it, and what was typed is put into that text.
   */
  sourceBase: string | null;
  /** where each block is written in the pane's text */
  blockLines: Record<string, BlockLines>;
  /** the pane's text has edits the server has not read yet */
  parsing: boolean;
  /** the user's choice, remembered */
  paneOpen: boolean;
  /**
   * the pane opened by itself for a file that does not read, and stays (until closed) once the typing in it makes
   * the file read: the keys typed next go on into it
   */
  paneKept: boolean;
  /** a selection made in the pane (so the pane does not move its own cursor back) */
  selectionFromPane: boolean;

  loadSource: (path: string) => Promise<void>;
  /** the user typed in the pane */
  typeSource: (text: string) => void;
  /** the document changed elsewhere (canvas, forms, undo): ask for the text its save would write */
  followDocument: () => void;
  /** the user opens or closes the pane (closing one kept for a broken file too) */
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

/** The YAML pane is on the page: opened by the user, kept since its file did not read, or for a file that does not. */
export const paneShown = (s: Pick<StudioState, 'paneOpen' | 'paneKept' | 'path' | 'diagram'>) =>
  s.paneOpen || s.paneKept || (!!s.path && !s.diagram);

/**
 * The document changed elsewhere (canvas, forms, undo) since the pane's text last held it: until the pane follows,
 * a reading of its text would undo that change.
 */
export const paneBehind = (s: Pick<StudioState, 'diagram' | 'sourceFor' | 'sourceBase'>) =>
  s.diagram !== null && s.sourceBase !== null && s.diagram !== s.sourceFor;

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
  /** the document whose text is asked for now (one request for it, however often it is wanted) */
  let asked: Diagram | null = null;

  /** `text` becomes the pane's, read by the server after the typing pauses. */
  function readLater(text: string) {
    set({ sourceText: text, parsing: true, validating: true });
    if (parseTimer) clearTimeout(parseTimer);
    parseTimer = setTimeout(() => void parseNow(text), PARSE_DELAY_MS);
  }

  async function parseNow(text: string) {
    const { path } = get();
    if (!path) return;
    const seq = ++parseSeq;
    const current = () => seq === parseSeq && get().sourceText === text;
    try {
      // the reading first (the canvas follows the typing at once), then the check (problems, the compiled picture)
      const read = await api.parse(path, text, false);
      if (!current()) return;
      set({ blockLines: read.blocks });
      if (read.diagram && paneBehind(get())) {
        // typed over a text without the document's latest edit: its reading would undo that edit. The edit's text
        // comes first, what was typed is put into it, and that is read instead (still "reading…" till then)
        void follow();
        return;
      }
      set({ parsing: false });
      if (read.diagram) get().adoptDiagram(read.diagram, text);
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

  /**
   * The pane follows the document: the text the document's save would write, asked over the pane's base text; keys
   * typed meanwhile are put into it and the result read as typed.
   */
  async function follow() {
    if (previewTimer) clearTimeout(previewTimer);
    previewTimer = null;
    const { diagram, path, hash, sourceBase, sourceText, parsing } = get();
    if (!paneBehind(get())) {
      // caught up without a text (an undo back to the pane's document): keys held back are read now
      if (parsing && sourceText !== null && sourceText !== sourceBase) readLater(sourceText);
      return;
    }
    if (!diagram || !path || sourceBase === null || asked === diagram) return;
    asked = diagram;
    const seq = ++previewSeq;
    try {
      const r = await api.preview(path, hash, diagram, sourceBase);
      if (seq !== previewSeq) return;
      asked = null;
      const s = get();
      if (s.path !== path || s.diagram !== diagram || s.sourceBase !== sourceBase) {
        void follow(); // the document (or the pane's base) moved on meanwhile: its own text is asked for
        return;
      }
      const typed = s.sourceText ?? sourceBase;
      if (typed === sourceBase) {
        set({ sourceText: r.text, sourceFor: diagram, sourceBase: r.text, blockLines: r.blocks });
        return;
      }
      const merged = rebaseText(sourceBase, typed, r.text);
      set({ sourceFor: diagram, sourceBase: r.text });
      if (merged.conflicts) {
        get().toast('what you typed in the YAML and an edit elsewhere changed the same lines: both are kept between conflict markers', 'warning');
      }
      readLater(merged.result);
    } catch (e) {
      if (seq !== previewSeq) return;
      asked = null;
      // the pane keeps its text and the next edit asks again; keys typed meanwhile wait for it, so say why
      const s = get();
      if (s.sourceText !== s.sourceBase) {
        set({ parsing: false, validating: false });
        get().toast(`the YAML cannot show the latest edit yet: ${e instanceof Error ? e.message : String(e)}`, 'warning');
      }
    }
  }

  return {
    sourceText: null,
    savedText: null,
    sourceFor: null,
    sourceBase: null,
    blockLines: {},
    parsing: false,
    paneOpen: storedPaneOpen(),
    paneKept: false,
    selectionFromPane: false,

    async loadSource(path) {
      try {
        const r = await api.source(path);
        if (get().path !== path) return;
        const { saved, hash, diagram } = get();
        // the file's text holds the document as it was loaded (or saved) while the file is the one loaded
        const holds = r.hash === hash ? saved : null;
        let shown = { sourceText: r.text, sourceBase: r.text, sourceFor: holds, blockLines: r.blocks };
        if (diagram && diagram !== holds) {
          // edits made while the pane was closed (a form, the canvas): it opens on the text their save would write,
          // never on a text without them (typed over, that text's reading would undo them)
          try {
            const p = await api.preview(path, r.hash, diagram, r.text);
            if (get().path !== path) return;
            shown = { sourceText: p.text, sourceBase: p.text, sourceFor: diagram, blockLines: p.blocks };
          } catch {
            // the file's text, behind the document: the pane follows it as it does the canvas, keys typed wait
          }
        }
        const s = get();
        if (s.sourceText !== null && s.sourceText !== s.sourceBase) {
          // keys typed in the pane that the document has not taken yet (the text reloaded after a save of the
          // document): they stay, and go into the document's text as the pane follows it
          set({ savedText: r.text });
        } else {
          set({ ...shown, savedText: r.text });
        }
        if (paneBehind(get())) void follow(); // edited again while the text was on its way
      } catch (e) {
        get().toast(`cannot read the text of ${path}: ${e instanceof Error ? e.message : String(e)}`, 'error');
      }
    },

    typeSource(text) {
      if (text === get().sourceText) return;
      readLater(text);
    },

    followDocument() {
      if (previewTimer) clearTimeout(previewTimer);
      previewTimer = setTimeout(() => void follow(), PREVIEW_DELAY_MS);
    },

    setPaneOpen(open) {
      const before = get();
      const shown = paneShown(before);
      set({ paneOpen: open, paneKept: false });
      if (paneShown(get()) !== shown) get().requestFit(); // the canvas is another width now
      const { path, sourceText } = get();
      if (open && !shown && path && sourceText === null) void get().loadSource(path);
      if (open === before.paneOpen) return;
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
