/**
 * Pinned outputs (issue 43): the open diagram's pins, by block id, as the server keeps them (a scenario file beside
 * the diagram: GET/PUT/DELETE /api/diagrams/{path}/pins). A store of its own: the canvas's pin badge, the step's
 * "Pin this output" and the block's Pinned output section read and change it.
 */
import { create } from 'zustand';
import { api } from '../api/client';
import type { Pins } from '../api/types';

export interface PinsState {
  /** the diagram the pins are of */
  path: string | null;
  /** the scenario file they are kept in (null: none pinned) */
  file: string | null;
  /** block id → its pinned output (text, or a structured answer) */
  pinned: Record<string, unknown>;
  load: (path: string | null) => Promise<void>;
  pin: (path: string, block: string, output: unknown, inputs?: Record<string, unknown>) => Promise<void>;
  unpin: (path: string, block: string) => Promise<void>;
}

export function pinnedOf(answer: Pins): Record<string, unknown> {
  return Object.fromEntries(answer.pins.map((p) => [p.block, p.text ?? p.output]));
}

export const usePins = create<PinsState>((set, get) => ({
  path: null,
  file: null,
  pinned: {},
  async load(path) {
    if (!path) { set({ path: null, file: null, pinned: {} }); return; }
    const answer = await api.pins(path);
    set({ path, file: answer.file, pinned: pinnedOf(answer) });
  },
  async pin(path, block, output, inputs) {
    const answer = await api.pin(path, block, output, inputs);
    if (get().path === path || get().path === null) set({ path, file: answer.file, pinned: pinnedOf(answer) });
  },
  async unpin(path, block) {
    const answer = await api.unpin(path, block);
    if (get().path === path) set({ file: answer.file, pinned: pinnedOf(answer) });
  },
}));
