/**
 * The one store: the open diagram, its undo/redo history (snapshots), the
 * server's view of it (problems, compiled), selection, runs, and the actions
 * that talk to the server. Edits go through `apply(op)` with the pure
 * operations of model/ops.
 */
import { create } from 'zustand';
import { api, ApiError } from './api/client';
import type {
  Block, BlockType, Compiled, Diagram, DiagramSummary, Problem, Registry, RunData, RunSummary, ScenarioResult, Session,
} from './api/types';
import { layoutDiagram, type LayoutResult } from './model/layout';
import { paste as pasteOp, removeBlocks, removeLink, type Position } from './model/ops';
import { loopBodies, parseEdgeId } from './model/graph';

export type PanelTab = 'properties' | 'run' | 'problems';

export interface Toast {
  id: number;
  message: string;
  kind: 'info' | 'success' | 'warning' | 'error';
}

export interface Conflict {
  /** 'save': the server answered 409 to a save; 'disk': the hash poll saw a change while there were unsaved edits */
  kind: 'save' | 'disk';
  hash: string;
  diff: string | null;
}

export interface ActiveRun {
  runId: string;
  data: RunData | null;
  events: unknown[];
}

export interface Dialog {
  title: string;
  message?: string;
  /** a text field, prefilled */
  input?: { label: string; value: string };
  confirm: string;
  danger?: boolean;
  onConfirm: (value: string) => void | Promise<void>;
}

interface ApplyOptions {
  /** consecutive edits with the same key (e.g. typing in one field) make one undo step */
  coalesce?: string;
}

export interface StudioState {
  session: Session | null;
  palette: BlockType[];
  files: DiagramSummary[];
  loadError: string | null;

  path: string | null;
  hash: string;
  diagram: Diagram | null;
  saved: Diagram | null;
  past: Diagram[];
  future: Diagram[];
  problems: Problem[];
  compiled: Compiled | null;
  registries: Registry[];
  validating: boolean;
  saving: boolean;
  layout: LayoutResult | null;
  /** which diagram and which auto-layout request the layout was made for */
  layoutFor: string;
  layoutGeneration: number;

  selection: string[];
  selectedEdge: string | null;
  clipboard: Block[];
  pasteCount: number;

  toasts: Toast[];
  conflict: Conflict | null;
  dialog: Dialog | null;
  helpOpen: boolean;
  panelTab: PanelTab;
  fitRequest: number;

  run: ActiveRun | null;
  runs: RunSummary[];
  scenarioResults: ScenarioResult[] | null;
  scenariosRunning: boolean;

  init: () => Promise<void>;
  refreshFiles: () => Promise<void>;
  /** true when the diagram opened; `quiet`: no toast when it cannot */
  open: (path: string, opts?: { silent?: boolean; keepSelection?: boolean; quiet?: boolean }) => Promise<boolean>;
  apply: (op: (d: Diagram) => Diagram, opts?: ApplyOptions) => boolean;
  undo: () => void;
  redo: () => void;
  save: () => Promise<void>;
  validateNow: () => Promise<void>;
  setLayout: (layout: LayoutResult | null, layoutFor?: string) => void;
  relayout: () => void;
  select: (ids: string[], edge?: string | null) => void;
  copy: () => void;
  pasteClipboard: () => void;
  deleteSelection: () => void;
  toast: (message: string, kind?: Toast['kind']) => void;
  dismissToast: (id: number) => void;
  resolveConflict: (choice: 'reload' | 'keep') => Promise<void>;
  pollHash: () => Promise<void>;
  setDialog: (dialog: Dialog | null) => void;
  setHelp: (open: boolean) => void;
  setPanelTab: (tab: PanelTab) => void;
  requestFit: () => void;

  createFile: (path: string, copyOf?: string) => Promise<void>;
  renameFile: (path: string, to: string) => Promise<void>;
  deleteFile: (path: string) => Promise<void>;

  startRun: (inputs: Record<string, unknown>, offline: boolean) => Promise<void>;
  openRun: (runId: string) => Promise<void>;
  closeRun: () => void;
  loadRuns: () => Promise<void>;
  saveScenario: (path: string) => Promise<void>;
  runScenarios: (folder?: string) => Promise<void>;
}

export const isDirty = (s: Pick<StudioState, 'diagram' | 'saved'>) => s.diagram !== s.saved;
export const isReadOnly = (s: Pick<StudioState, 'session'>) => !!s.session?.read_only;

const VALIDATE_DELAY_MS = 300;
const HASH_POLL_MS = 2000;
const RUN_POLL_MS = 300;
const HISTORY_LIMIT = 200;

let validateTimer: ReturnType<typeof setTimeout> | null = null;
let validateSeq = 0;
let coalesceKey: string | null = null;
let coalesceAt = 0;
let toastSeq = 0;
let runTimer: ReturnType<typeof setTimeout> | null = null;
let hashTimer: ReturnType<typeof setInterval> | null = null;
let loadSeq = 0;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A timing mark for the page's opening (read by benchmarks/studio_open and the browser's performance panel). */
export function mark(name: string): void {
  try {
    performance.mark(name);
  } catch {
    // timing marks are optional
  }
}

/** How long init waits for the first diagram's layout before asking for the list of diagrams anyway. */
const FIRST_DRAW_WAIT_MS = 3000;

export const useStudio = create<StudioState>()((set, get, store) => {
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

  /** Validation after the edits pause; the status says "checking" from the edit on, never a stale verdict. */
  function scheduleValidate() {
    if (validateTimer) clearTimeout(validateTimer);
    set({ validating: true });
    validateTimer = setTimeout(() => void get().validateNow(), VALIDATE_DELAY_MS);
  }

  function pollRun(runId: string) {
    if (runTimer) clearTimeout(runTimer);
    const tick = async () => {
      const current = get().run;
      if (!current || current.runId !== runId) return;
      try {
        const data = await api.run(runId, current.events.length);
        const still = get().run;
        if (!still || still.runId !== runId) return;
        set({ run: { runId, data, events: [...still.events, ...(data.events ?? [])] } });
        if (data.status === 'running') runTimer = setTimeout(tick, RUN_POLL_MS);
        else {
          get().toast(`run ${data.status}`, data.status === 'succeeded' ? 'success' : 'error');
          void get().loadRuns();
        }
      } catch (e) {
        get().toast(`run: ${message(e)}`, 'error');
      }
    };
    runTimer = setTimeout(tick, 0);
  }

  return {
    session: null,
    palette: [],
    files: [],
    loadError: null,
    path: null,
    hash: '',
    diagram: null,
    saved: null,
    past: [],
    future: [],
    problems: [],
    compiled: null,
    registries: [],
    validating: false,
    saving: false,
    layout: null,
    layoutFor: '',
    layoutGeneration: 0,
    selection: [],
    selectedEdge: null,
    clipboard: [],
    pasteCount: 0,
    toasts: [],
    conflict: null,
    dialog: null,
    helpOpen: false,
    panelTab: 'properties',
    fitRequest: 0,
    run: null,
    runs: [],
    scenarioResults: null,
    scenariosRunning: false,

    async init() {
      mark('studio:init');
      const fail = (e: unknown) => set({ loadError: message(e) });
      // the session, the palette and the diagram named in the address load at once (index.html already asked
      // for them); the list of diagrams is slower (the server checks every file), so it comes after the first
      // diagram is drawn, unless there is no diagram named to open
      const session = api.session().then((s) => set({ session: s }), fail);
      const palette = api.blocks().then((p) => set({ palette: p }), fail);
      let fromHash = '';
      try {
        fromHash = decodeURIComponent(window.location.hash.replace(/^#\/?/, ''));
      } catch {
        // a malformed address opens the first diagram
      }
      const opened = fromHash ? await get().open(fromHash, { quiet: true }) : false;
      if (opened) await drawn();
      try {
        const files = await api.diagrams();
        set({ files });
        if (!opened && !get().path) {
          const first = files.find((f) => f.path === fromHash) ?? files[0];
          if (first) await get().open(first.path);
        }
      } catch (e) {
        fail(e);
      }
      await Promise.all([session, palette]);
      if (hashTimer) clearInterval(hashTimer);
      hashTimer = setInterval(() => void get().pollHash(), HASH_POLL_MS);
    },

    async refreshFiles() {
      try {
        set({ files: await api.diagrams() });
      } catch (e) {
        get().toast(message(e), 'error');
      }
    },

    async open(path, opts = {}) {
      const seq = ++loadSeq;
      try {
        const file = await api.diagram(path);
        if (seq !== loadSeq) return false;
        mark('studio:diagram-loaded');
        const samePath = get().path === path;
        set({
          path: file.path,
          hash: file.hash,
          diagram: file.diagram,
          saved: file.diagram,
          past: samePath && opts.silent ? get().past : [],
          future: samePath && opts.silent ? get().future : [],
          problems: file.problems ?? [],
          compiled: file.compiled ?? null,
          registries: file.registries ?? [],
          selection: opts.keepSelection ? get().selection.filter((id) => file.diagram.blocks.some((b) => b.id === id)) : [],
          selectedEdge: null,
          conflict: null,
          layout: samePath ? get().layout : null,
          run: samePath ? get().run : null,
          scenarioResults: samePath ? get().scenarioResults : null,
          pasteCount: 0,
        });
        if (!samePath) {
          // start the layout now, while the page renders (the canvas asks for the same graph and shares it)
          if (file.diagram.blocks.some((b) => !Array.isArray(b.position))) {
            const bodyTypes = new Set(get().palette.filter((t) => t.ports.includes('body')).map((t) => t.type));
            layoutDiagram(file.diagram, loopBodies(file.diagram, file.compiled ?? null), bodyTypes).catch(() => undefined);
          }
          if (runTimer) clearTimeout(runTimer);
          set({ runs: [] });
          void get().loadRuns();
          get().requestFit();
        }
        if (window.location.hash !== `#${file.path}`) history.replaceState(null, '', `#${file.path}`);
        return true;
      } catch (e) {
        if (!opts.quiet) get().toast(`cannot open ${path}: ${message(e)}`, 'error');
        return false;
      }
    },

    apply(op, opts = {}) {
      const { diagram, past } = get();
      if (!diagram) return false;
      if (isReadOnly(get())) {
        get().toast('read-only session: edits are disabled', 'warning');
        return false;
      }
      let next: Diagram;
      try {
        next = op(diagram);
      } catch (e) {
        get().toast(message(e), 'error');
        return false;
      }
      if (next === diagram) return true;
      const now = Date.now();
      const merge = !!opts.coalesce && opts.coalesce === coalesceKey && now - coalesceAt < 1500 && past.length > 0;
      coalesceKey = opts.coalesce ?? null;
      coalesceAt = now;
      set({ diagram: next, past: merge ? past : [...past, diagram].slice(-HISTORY_LIMIT), future: [] });
      scheduleValidate();
      return true;
    },

    undo() {
      const { past, future, diagram } = get();
      if (!past.length || !diagram || isReadOnly(get())) return;
      coalesceKey = null;
      set({ diagram: past[past.length - 1], past: past.slice(0, -1), future: [diagram, ...future] });
      scheduleValidate();
    },

    redo() {
      const { past, future, diagram } = get();
      if (!future.length || !diagram || isReadOnly(get())) return;
      coalesceKey = null;
      set({ diagram: future[0], past: [...past, diagram], future: future.slice(1) });
      scheduleValidate();
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
        set({ problems: result.problems ?? [], compiled: result.compiled ?? get().compiled, validating: false });
      } catch (e) {
        if (seq === validateSeq) set({ validating: false });
        get().toast(`validation: ${message(e)}`, 'error');
      }
    },

    async save() {
      const { diagram, path, hash, saving } = get();
      if (!diagram || !path || saving) return;
      if (isReadOnly(get())) {
        get().toast('read-only session: saving is disabled', 'warning');
        return;
      }
      set({ saving: true });
      try {
        const result = await api.save(path, hash, diagram);
        set({ hash: result.hash, saved: diagram, problems: result.problems ?? [], compiled: result.compiled ?? get().compiled, saving: false });
        const errors = (result.problems ?? []).filter((p) => p.severity === 'error').length;
        if (errors) get().toast(`saved ${path} — with ${errors} problem${errors > 1 ? 's' : ''}: it will not run until fixed`, 'warning');
        else get().toast(`saved ${path}`, 'success');
        void get().refreshFiles();
      } catch (e) {
        set({ saving: false });
        if (e instanceof ApiError && e.status === 409) {
          set({ conflict: { kind: 'save', hash: String(e.data.hash ?? ''), diff: typeof e.data.diff === 'string' ? e.data.diff : null } });
        } else {
          get().toast(`save failed: ${message(e)}`, 'error');
        }
      }
    },

    setLayout(layout, layoutFor = '') {
      set({ layout, layoutFor });
    },

    relayout() {
      set({ layoutGeneration: get().layoutGeneration + 1 });
    },

    select(ids, edge = null) {
      const { selection, selectedEdge } = get();
      const same = ids.length === selection.length && ids.every((id, i) => id === selection[i]) && edge === selectedEdge;
      if (!same) set({ selection: ids, selectedEdge: edge });
    },

    copy() {
      const { diagram, selection } = get();
      if (!diagram || !selection.length) return;
      const blocks = diagram.blocks.filter((b) => selection.includes(b.id));
      set({ clipboard: structuredClone(blocks), pasteCount: 0 });
      try {
        void navigator.clipboard?.writeText(JSON.stringify(blocks, null, 2)).catch(() => undefined);
      } catch {
        // the system clipboard is optional
      }
      get().toast(`copied ${blocks.length} block${blocks.length > 1 ? 's' : ''}`);
    },

    pasteClipboard() {
      const { clipboard, layout, pasteCount } = get();
      if (!clipboard.length) return;
      const n = pasteCount + 1;
      const positions: Record<string, Position> = {};
      for (const [id, p] of Object.entries(layout?.nodes ?? {})) positions[id] = [p.x, p.y];
      let ids: string[] = [];
      const ok = get().apply((d) => {
        const r = pasteOp(d, clipboard, [40 * n, 40 * n], positions);
        ids = r.ids;
        return r.diagram;
      });
      if (ok) set({ pasteCount: n, selection: ids, selectedEdge: null });
    },

    deleteSelection() {
      const { selection, selectedEdge } = get();
      if (selection.length) {
        if (get().apply((d) => removeBlocks(d, selection))) set({ selection: [], selectedEdge: null });
      } else if (selectedEdge) {
        const e = parseEdgeId(selectedEdge);
        if (e && get().apply((d) => removeLink(d, e.source, e.kind, e.index))) set({ selectedEdge: null });
      }
    },

    toast(messageText, kind = 'info') {
      const id = ++toastSeq;
      set({ toasts: [...get().toasts, { id, message: messageText, kind }].slice(-5) });
      setTimeout(() => get().dismissToast(id), kind === 'error' ? 8000 : 4000);
    },

    dismissToast(id) {
      set({ toasts: get().toasts.filter((t) => t.id !== id) });
    },

    async resolveConflict(choice) {
      const { conflict, path } = get();
      if (!conflict || !path) return;
      if (choice === 'reload') {
        await get().open(path, { keepSelection: true });
        get().toast('reloaded from disk', 'info');
      } else {
        // keep the edits; the next save replaces the file as it is now
        set({ conflict: null, hash: conflict.hash });
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

    setDialog(dialog) {
      set({ dialog });
    },
    setHelp(open) {
      set({ helpOpen: open });
    },
    setPanelTab(tab) {
      set({ panelTab: tab });
    },
    requestFit() {
      set({ fitRequest: get().fitRequest + 1 });
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
          set({ path: null, diagram: null, saved: null, past: [], future: [], problems: [], compiled: null, run: null, runs: [] });
          const first = get().files[0];
          if (first) await get().open(first.path);
        }
        get().toast(`deleted ${path}`, 'success');
      } catch (e) {
        get().toast(message(e), 'error');
      }
    },

    async startRun(inputs, offline) {
      const { path, session } = get();
      if (!path) return;
      try {
        const r = await api.startRun(path, inputs, session?.allow_online ? offline : true);
        set({ run: { runId: r.run_id, data: null, events: [] }, panelTab: 'run' });
        pollRun(r.run_id);
        void get().loadRuns();
      } catch (e) {
        get().toast(`run: ${message(e)}`, 'error');
      }
    },

    async openRun(runId) {
      set({ run: { runId, data: null, events: [] } });
      pollRun(runId);
    },

    closeRun() {
      if (runTimer) clearTimeout(runTimer);
      set({ run: null });
    },

    async loadRuns() {
      const { path } = get();
      if (!path) return;
      try {
        const runs = await api.runs(path);
        if (get().path === path) set({ runs });
      } catch {
        // the runs list is optional
      }
    },

    async saveScenario(scenarioPath) {
      const run = get().run;
      if (!run) return;
      try {
        const r = await api.saveScenario(run.runId, scenarioPath);
        get().toast(`saved scenario ${r.path}`, 'success');
      } catch (e) {
        get().toast(message(e), 'error');
      }
    },

    async runScenarios(folder = '.') {
      set({ scenariosRunning: true });
      try {
        const r = await api.runScenarios(folder);
        set({ scenarioResults: r.results, scenariosRunning: false });
      } catch (e) {
        set({ scenariosRunning: false });
        get().toast(`scenarios: ${message(e)}`, 'error');
      }
    },
  };
});
