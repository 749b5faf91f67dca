/**
 * The sync slice: what the server knows and says. The session, the palette and the file format's facts; the
 * folder's diagrams; opening a diagram, validating edits (debounced), saving, watching the file's hash for changes
 * made elsewhere, and the conflicts either brings.
 */
import type { StateCreator } from 'zustand';
import { api, ApiError } from '../api/client';
import type { BlockType, Compiled, Diagram, DiagramSummary, Format, Problem, Registry, Session } from '../api/types';
import { linkKeys, type LinkKeys } from '../model/format';
import { loopBodies } from '../model/graph';
import { layoutDiagram } from '../model/layout';
import { mark } from '../timing';
import type { StudioState } from './index';

export interface Conflict {
  /** 'save': the server answered 409 to a save; 'disk': the hash poll saw a change while there were unsaved edits */
  kind: 'save' | 'disk';
  hash: string;
  diff: string | null;
}

export interface OpenOptions {
  /** a reload of the same file: keep the history */
  silent?: boolean;
  keepSelection?: boolean;
  /** no toast when it cannot open */
  quiet?: boolean;
  /** the address names it already (the first open, Back and Forward): no new history entry */
  replace?: boolean;
}

export interface SyncSlice {
  session: Session | null;
  palette: BlockType[];
  format: Format | null;
  /** the format's link keys with each type's ports: known once the format and the palette are */
  links: LinkKeys | null;
  files: DiagramSummary[];
  /** the folder's scenario files (`*.scenario.yaml`), at any depth */
  scenarioFiles: string[];
  loadError: string | null;

  path: string | null;
  hash: string;
  /** the diagram as the file has it (what the document is compared with for unsaved edits) */
  saved: Diagram | null;
  problems: Problem[];
  compiled: Compiled | null;
  registries: Registry[];
  validating: boolean;
  saving: boolean;
  conflict: Conflict | null;

  init: () => Promise<void>;
  refreshFiles: () => Promise<void>;
  /** true when the diagram opened */
  open: (path: string, opts?: OpenOptions) => Promise<boolean>;
  scheduleValidate: () => void;
  validateNow: () => Promise<void>;
  save: () => Promise<void>;
  pollHash: () => Promise<void>;
  /** reload: drop my edits; merge: yours, theirs and the base merged; overwrite: my next save replaces the file */
  resolveConflict: (choice: 'reload' | 'merge' | 'overwrite') => Promise<void>;
  createFile: (path: string, copyOf?: string) => Promise<void>;
  renameFile: (path: string, to: string) => Promise<void>;
  deleteFile: (path: string) => Promise<void>;
}

/**
 * The compiled picture, with the effective levels of the last one that had them while this one has none (a
 * diagram with problems does not compile, so its levels are not known again until it does): the form keeps
 * showing what a block inherits instead of nothing.
 */
export function keptLevels(next: Compiled, before: Compiled | null): Compiled {
  if (Object.keys(next.levels).length || !before || !Object.keys(before.levels).length) return next;
  return { ...next, levels: before.levels };
}

/** The file an address's fragment names (`#sub/x.yaml`), or '' for none or a malformed one. */
export function decodeHash(hash: string): string {
  try {
    return decodeURIComponent(hash.replace(/^#\/?/, ''));
  } catch {
    return '';
  }
}

/** Unsaved edits: on the canvas and forms (another document), or in the YAML pane (another text). */
export const isDirty = (s: Pick<StudioState, 'diagram' | 'saved' | 'sourceText' | 'savedText'>) =>
  s.diagram !== s.saved || (s.sourceText !== null && s.savedText !== null && s.sourceText !== s.savedText);

const VALIDATE_DELAY_MS = 300;
const HASH_POLL_MS = 2000;
/** How long init waits for the first diagram's layout before asking for the list of diagrams anyway. */
const FIRST_DRAW_WAIT_MS = 3000;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export const createSyncSlice: StateCreator<StudioState, [], [], SyncSlice> = (set, get, store) => {
  let validateTimer: ReturnType<typeof setTimeout> | null = null;
  let validateSeq = 0;
  let hashTimer: ReturnType<typeof setInterval> | null = null;
  let loadSeq = 0;

  let paletteKnown = false;

  /** Sets what the server said of the format or the palette; the link keys follow once both are known. */
  function learn(patch: { format?: Format; palette?: BlockType[] }) {
    if (patch.palette) paletteKnown = true;
    const format = patch.format ?? get().format;
    set({ ...patch, links: format && paletteKnown ? linkKeys(format, patch.palette ?? get().palette) : null });
  }

  /** Resolves once the open diagram is laid out (or needs no layout), or after FIRST_DRAW_WAIT_MS. */
  function drawn(): Promise<void> {
    const done = () => {
      const { diagram, layout } = get();
      return !diagram || !!layout || diagram.blocks.every((b) => Array.isArray(b.position));
    };
    return new Promise((resolve) => {
      if (done()) return resolve();
      const finish = () => {
        clearTimeout(timer);
        unsubscribe();
        resolve();
      };
      const timer = setTimeout(finish, FIRST_DRAW_WAIT_MS);
      const unsubscribe = store.subscribe(() => { if (done()) finish(); });
    });
  }

  /** Starts the layout of a diagram just opened while the page renders (the canvas asks for the same and shares it). */
  function startLayout(diagram: Diagram, compiled: Compiled | null) {
    const keys = get().links;
    if (keys && diagram.blocks.some((b) => !Array.isArray(b.position))) {
      layoutDiagram(diagram, loopBodies(diagram, compiled, keys), keys).catch(() => undefined);
    }
  }

  return {
    session: null,
    palette: [],
    format: null,
    links: null,
    files: [],
    scenarioFiles: [],
    loadError: null,
    path: null,
    hash: '',
    saved: null,
    problems: [],
    compiled: null,
    registries: [],
    validating: false,
    saving: false,
    conflict: null,

    async init() {
      mark('studio:init');
      const fail = (e: unknown) => set({ loadError: message(e) });
      // the session, the format, the palette and the diagram named in the address load at once (index.html already
      // asked for them); the list of diagrams is slower (the server checks every file), so it comes after the first
      // diagram is drawn, unless there is no diagram named to open
      const session = api.session().then((s) => set({ session: s }), fail);
      const format = api.format().then((f) => learn({ format: f }), fail);
      const palette = api.blocks().then((p) => learn({ palette: p }), fail);
      const fromHash = decodeHash(window.location.hash);
      const opened = fromHash ? await get().open(fromHash, { quiet: true, replace: true }) : false;
      if (opened) await drawn();
      void api.scenarios().then((s) => set({ scenarioFiles: s.map((f) => f.path) }), () => undefined);
      try {
        const files = await api.diagrams();
        set({ files });
        if (!opened && !get().path) {
          const first = files.find((f) => f.path === fromHash) ?? files[0];
          if (first) await get().open(first.path, { replace: true });
        }
      } catch (e) {
        fail(e);
      }
      await Promise.all([session, format, palette]);
      if (hashTimer) clearInterval(hashTimer);
      hashTimer = setInterval(() => void get().pollHash(), HASH_POLL_MS);
    },

    async refreshFiles() {
      try {
        const [files, scenarios] = await Promise.all([api.diagrams(), api.scenarios().catch(() => [])]);
        set({ files, scenarioFiles: scenarios.map((s) => s.path) });
      } catch (e) {
        get().toast(message(e), 'error');
      }
    },

    async open(path, opts = {}) {
      const seq = ++loadSeq;
      // another file: this one's unsaved edits stay in the browser's storage, offered back when it opens again
      if (get().path && get().path !== path) get().keepDraft(true);
      try {
        const file = await api.diagram(path);
        if (seq !== loadSeq) return false;
        mark('studio:diagram-loaded');
        const samePath = get().path === path;
        const diagram = file.diagram;
        // a file that does not read opens in its YAML, and the pane stays there when the typing makes it read
        const paneKept = !diagram || (samePath && get().paneKept);
        get().replaceDocument(diagram, { keepHistory: samePath && opts.silent });
        set({
          sourceText: null,
          savedText: null,
          sourceFor: null,
          sourceBase: null,
          paneKept,
          blockLines: {},
          path: file.path,
          hash: file.hash,
          saved: diagram,
          problems: file.problems,
          compiled: file.compiled,
          registries: file.registries,
          selection: opts.keepSelection && diagram ? get().selection.filter((id) => diagram.blocks.some((b) => b.id === id)) : [],
          selectedEdge: null,
          conflict: null,
          layout: samePath ? get().layout : null,
        });
        // the text is read when the YAML pane shows it (a broken file opens in it): not on the way to the canvas
        if (paneKept || get().paneOpen) void get().loadSource(file.path);
        if (!opts.silent) get().offerDraft(file.path);
        if (!diagram) set({ panelTab: 'problems' });
        if (!samePath) {
          if (diagram) startLayout(diagram, file.compiled);
          get().forgetRuns();
          void get().loadRuns();
          get().requestFit();
        }
        // a file the user opened is a step Back and Forward return to; the first one replaces the bare address
        if (decodeHash(window.location.hash) !== file.path) {
          if (opts.replace || !window.location.hash) history.replaceState(null, '', `#${file.path}`);
          else history.pushState(null, '', `#${file.path}`);
        }
        return true;
      } catch (e) {
        if (!opts.quiet) get().toast(`cannot open ${path}: ${message(e)}`, 'error');
        return false;
      }
    },

    /** Validation after the edits pause; the status says "checking" from the edit on, never a stale verdict. */
    scheduleValidate() {
      if (validateTimer) clearTimeout(validateTimer);
      // A check in flight is for the document before this edit: its answer must neither end "checking" nor show
      // its problems (the seq makes validateNow drop it).
      validateSeq++;
      set({ validating: true });
      validateTimer = setTimeout(() => void get().validateNow(), VALIDATE_DELAY_MS);
    },

    async validateNow() {
      const { diagram, path } = get();
      if (!diagram || !path) {
        set({ validating: false });
        return;
      }
      const seq = ++validateSeq;
      set({ validating: true });
      try {
        const result = await api.validate(path, diagram);
        if (seq !== validateSeq) return;
        set({ problems: result.problems, compiled: keptLevels(result.compiled, get().compiled), registries: result.registries,
          validating: false });
      } catch (e) {
        if (seq === validateSeq) set({ validating: false });
        get().toast(`validation: ${message(e)}`, 'error');
      }
    },

    async save() {
      const { diagram, path, hash, saving, session, sourceText, sourceFor } = get();
      if (!path || saving || (!diagram && sourceText === null)) return;
      if (session?.read_only) {
        get().toast('read-only session: saving is disabled', 'warning');
        return;
      }
      set({ saving: true });
      try {
        // the pane's text when it holds the document (what was typed in it, comments and all, is written as typed),
        // else the document, written as its smallest edit
        const asText = sourceText !== null && (!diagram || sourceFor === diagram);
        const result = asText ? await api.saveSource(path, hash, sourceText) : await api.save(path, hash, diagram!);
        set({ hash: result.hash, saved: diagram, problems: result.problems, compiled: keptLevels(result.compiled, get().compiled), saving: false,
          registries: result.registries, ...(asText ? { savedText: sourceText } : {}) });
        get().forgetDraft(path);
        if (!asText && get().sourceText !== null) void get().loadSource(path);
        else if (!diagram) void get().open(path, { silent: true, keepSelection: true });
        const errors = result.problems.filter((p) => p.severity === 'error').length;
        if (errors) get().toast(`saved ${path} — with ${errors} problem${errors > 1 ? 's' : ''}: it will not run until fixed`, 'warning');
        else get().toast(`saved ${path}`, 'success');
        void get().refreshFiles();
      } catch (e) {
        set({ saving: false });
        if (e instanceof ApiError && e.status === 409) {
          set({ conflict: { kind: 'save', hash: e.data.hash ?? '', diff: e.data.diff ?? null } });
        } else {
          get().toast(`save failed: ${message(e)}`, 'error');
        }
      }
    },

    async pollHash() {
      const { path, hash, saving, conflict } = get();
      if (!path || saving || document.hidden) return;
      try {
        const now = await api.hash(path);
        const s = get();
        if (s.path !== path || s.saving || s.hash !== hash || now.hash === hash) return;
        if (!isDirty(s)) {
          await get().open(path, { silent: true, keepSelection: true });
          get().toast('reloaded: changed on disk', 'info');
        } else if (!conflict || conflict.hash !== now.hash) {
          set({ conflict: { kind: 'disk', hash: now.hash, diff: null } });
        }
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) {
          get().toast(`${path} is gone from disk`, 'warning');
          void get().refreshFiles();
        }
      }
    },

    async resolveConflict(choice) {
      const { conflict, path } = get();
      if (!conflict || !path) return;
      if (choice === 'reload') {
        get().forgetDraft(path);
        await get().open(path, { keepSelection: true });
        get().toast('reloaded from disk', 'info');
      } else if (choice === 'merge') {
        await get().startMerge(get().hash);
      } else {
        // keep the edits; the next save replaces the file as it is now
        set({ conflict: null, hash: conflict.hash });
      }
    },

    async createFile(path, copyOf) {
      try {
        const r = await api.create(path, copyOf);
        await get().refreshFiles();
        await get().open(r.path);
        get().toast(copyOf ? `duplicated ${copyOf} as ${r.path}` : `created ${r.path}`, 'success');
      } catch (e) {
        get().toast(message(e), 'error');
      }
    },

    async renameFile(path, to) {
      try {
        const r = await api.rename(path, to);
        await get().refreshFiles();
        if (get().path === path) {
          // keep unsaved edits: just follow the file to its new name
          set({ path: r.path });
          history.replaceState(null, '', `#${r.path}`);
        }
        get().toast(`renamed to ${r.path}`, 'success');
      } catch (e) {
        get().toast(message(e), 'error');
      }
    },

    async deleteFile(path) {
      try {
        await api.remove(path);
        await get().refreshFiles();
        if (get().path === path) {
          get().replaceDocument(null);
          get().forgetRuns();
          set({ path: null, saved: null, problems: [], compiled: null });
          const first = get().files[0];
          if (first) await get().open(first.path);
        }
        get().toast(`deleted ${path}`, 'success');
      } catch (e) {
        get().toast(message(e), 'error');
      }
    },
  };
};
