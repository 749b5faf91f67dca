/**
 * The studio's one store, cut in slices (zustand's slices pattern): the document being edited and its history
 * (document.ts), what the server knows and says (sync.ts), runs and scenarios (runs.ts), the chat with a diagram that
 * keeps memory (chat.ts), and UI state (ui.ts).
 * Each slice reads the others through `get()`; the canvas draws the store through one pure mapping
 * (components/canvas/mapping.ts) and keeps no copy of its own.
 */
import { create } from 'zustand';
import { createCanvasToolsSlice, type CanvasToolsSlice } from './canvasTools';
import { createChatSlice, type ChatSlice } from './chat';
import { createDocumentSlice, type DocumentSlice } from './document';
import { createDraftsSlice, type DraftsSlice } from './drafts';
import { createNavSlice, type NavSlice } from './nav';
import { createRunsSlice, type RunsSlice } from './runs';
import { createSourceSlice, paneBehind, type SourceSlice } from './source';
import { createSyncSlice, type SyncSlice } from './sync';
import { createUiSlice, type UiSlice } from './ui';

export type StudioState = DocumentSlice & SyncSlice & RunsSlice & UiSlice & SourceSlice & DraftsSlice & ChatSlice & NavSlice
  & CanvasToolsSlice;

/** A fresh store (the page has one, `useStudio`; tests make their own). */
export function createStudio() {
  const store = create<StudioState>()((...a) => ({
    ...createDocumentSlice(...a),
    ...createSyncSlice(...a),
    ...createRunsSlice(...a),
    ...createUiSlice(...a),
    ...createSourceSlice(...a),
    ...createDraftsSlice(...a),
    ...createChatSlice(...a),
    ...createCanvasToolsSlice(...a),
    ...createNavSlice(...a),
  }));
  // an edit anywhere but the pane (canvas, forms, undo): the pane asks for the text the save would write
  store.subscribe((s, before) => {
    if (s.diagram !== before.diagram && paneBehind(s)) s.followDocument();
    // unsaved edits are kept in the browser's storage, per file, until they are saved or discarded
    if ((s.diagram !== before.diagram || s.sourceText !== before.sourceText) && s.path && s.path === before.path) s.keepDraft();
  });
  return store;
}

export const useStudio = createStudio();

export { decodeHash, isDirty } from './sync';
export { paneShown } from './source';
export const isReadOnly = (s: Pick<StudioState, 'session'>) => !!s.session?.read_only;
export type { ApplyOptions, Edit } from './document';
export type { ActiveRun } from './runs';
export { replayOff } from './runs';
export type { ChatTurn } from './chat';
export type { QuickAdd } from './canvasTools';
export type { Conflict } from './sync';
export type { Draft, Merge } from './drafts';
export type { ContextMenu, Dialog, PanelTab, Theme, Toast, XY } from './ui';
