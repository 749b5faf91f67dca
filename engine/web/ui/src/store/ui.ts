/**
 * The UI slice: selection, where blocks being dragged are now, the automatic layout, panels, dialogs and toasts.
 * Nothing here is part of the file; the canvas mapping reads it beside the document.
 */
import type { StateCreator } from 'zustand';
import type { LayoutResult } from '../model/layout';
import type { StudioState } from './index';

export type PanelTab = 'properties' | 'run' | 'chat' | 'evals' | 'knowledge' | 'problems';

export interface Toast {
  id: number;
  message: string;
  kind: 'info' | 'success' | 'warning' | 'error';
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

export type Theme = 'system' | 'light' | 'dark';

/** A context menu open on a block or a link, at a point of the page. */
export interface ContextMenu {
  kind: 'block' | 'link';
  id: string;
  x: number;
  y: number;
}

export interface XY {
  x: number;
  y: number;
}

export interface UiSlice {
  selection: string[];
  selectedEdge: string | null;
  /** where the blocks being dragged are now; the document gets their places when the drag ends (moveTo) */
  dragging: Record<string, XY> | null;
  layout: LayoutResult | null;
  /** which diagram and which auto-layout request the layout was made for */
  layoutFor: string;
  layoutGeneration: number;
  toasts: Toast[];
  dialog: Dialog | null;
  helpOpen: boolean;
  /** the open file's version history is shown */
  historyOpen: boolean;
  panelTab: PanelTab;
  fitRequest: number;
  /** the field of the selected block to show (a problem's, an error's): the form scrolls to it once */
  focusField: string | null;
  /** a line of the YAML for the pane to show and put the cursor on, once (a problem's) */
  revealLine: number | null;
  theme: Theme;
  /** the theme in effect: the chosen one, or the system's */
  dark: boolean;
  contextMenu: ContextMenu | null;

  select: (ids: string[], edge?: string | null) => void;
  /** selects a block and shows its properties (from a problem, a step, a new block) */
  focusBlock: (id: string, field?: string | null) => void;
  setTheme: (theme: Theme) => void;
  setContextMenu: (menu: ContextMenu | null) => void;
  selectEdge: (id: string | null) => void;
  dragTo: (positions: Record<string, XY>) => void;
  setLayout: (layout: LayoutResult | null, layoutFor?: string) => void;
  relayout: () => void;
  toast: (message: string, kind?: Toast['kind']) => void;
  dismissToast: (id: number) => void;
  setDialog: (dialog: Dialog | null) => void;
  setHelp: (open: boolean) => void;
  setHistoryOpen: (open: boolean) => void;
  setPanelTab: (tab: PanelTab) => void;
  requestFit: () => void;
}

const TOASTS_SHOWN = 5;
const THEME_KEY = 'diagrama:theme';

function storedTheme(): Theme {
  try {
    const t = localStorage.getItem(THEME_KEY);
    return t === 'light' || t === 'dark' ? t : 'system';
  } catch {
    return 'system';
  }
}

export const createUiSlice: StateCreator<StudioState, [], [], UiSlice> = (set, get) => {
  let toastSeq = 0;
  return {
    selection: [],
    selectedEdge: null,
    dragging: null,
    layout: null,
    layoutFor: '',
    layoutGeneration: 0,
    toasts: [],
    dialog: null,
    helpOpen: false,
    historyOpen: false,
    panelTab: 'properties',
    fitRequest: 0,
    focusField: null,
    revealLine: null,
    theme: storedTheme(),
    dark: false,
    contextMenu: null,

    select(ids, edge = null) {
      const { selection, selectedEdge } = get();
      const same = ids.length === selection.length && ids.every((id, i) => id === selection[i]) && edge === selectedEdge;
      if (!same) set({ selection: ids, selectedEdge: edge });
    },

    focusBlock(id, field = null) {
      get().select([id], null);
      set({ focusField: field, ...(get().panelTab !== 'properties' ? { panelTab: 'properties' as const } : {}) });
    },

    setTheme(theme) {
      set({ theme });
      try {
        localStorage.setItem(THEME_KEY, theme);
      } catch {
        // remembering the theme is optional
      }
    },

    setContextMenu(menu) {
      set({ contextMenu: menu });
    },

    selectEdge(id) {
      if (id !== get().selectedEdge) set({ selectedEdge: id });
    },

    dragTo(positions) {
      set({ dragging: { ...get().dragging, ...positions } });
    },

    setLayout(layout, layoutFor = '') {
      set({ layout, layoutFor });
    },

    relayout() {
      set({ layoutGeneration: get().layoutGeneration + 1 });
    },

    toast(message, kind = 'info') {
      const id = ++toastSeq;
      set({ toasts: [...get().toasts, { id, message, kind }].slice(-TOASTS_SHOWN) });
      setTimeout(() => get().dismissToast(id), kind === 'error' ? 8000 : 4000);
    },

    dismissToast(id) {
      if (get().toasts.some((t) => t.id === id)) set({ toasts: get().toasts.filter((t) => t.id !== id) });
    },

    setDialog(dialog) {
      set({ dialog });
    },
    setHelp(open) {
      set({ helpOpen: open });
    },

    setHistoryOpen(open) {
      set({ historyOpen: open });
    },
    setPanelTab(tab) {
      set({ panelTab: tab });
    },
    requestFit() {
      set({ fitRequest: get().fitRequest + 1 });
    },
  };
};
