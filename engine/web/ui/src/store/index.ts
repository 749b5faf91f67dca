/**
 * The studio's one store, cut in slices (zustand's slices pattern): the document being edited and its history
 * (document.ts), what the server knows and says (sync.ts), runs and scenarios (runs.ts), and UI state (ui.ts).
 * Each slice reads the others through `get()`; the canvas draws the store through one pure mapping
 * (components/canvas/mapping.ts) and keeps no copy of its own.
 */
import { create } from 'zustand';
import { createDocumentSlice, type DocumentSlice } from './document';
import { createRunsSlice, type RunsSlice } from './runs';
import { createSyncSlice, type SyncSlice } from './sync';
import { createUiSlice, type UiSlice } from './ui';

export type StudioState = DocumentSlice & SyncSlice & RunsSlice & UiSlice;

/** A fresh store (the page has one, `useStudio`; tests make their own). */
export function createStudio() {
  return create<StudioState>()((...a) => ({
    ...createDocumentSlice(...a),
    ...createSyncSlice(...a),
    ...createRunsSlice(...a),
    ...createUiSlice(...a),
  }));
}

export const useStudio = createStudio();

export { isDirty } from './sync';
export const isReadOnly = (s: Pick<StudioState, 'session'>) => !!s.session?.read_only;
export type { ApplyOptions, Edit } from './document';
export type { ActiveRun } from './runs';
export type { Conflict } from './sync';
export type { Dialog, PanelTab, Toast, XY } from './ui';
