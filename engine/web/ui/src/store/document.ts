/**
 * The document slice: the diagram being edited and its history. Every edit goes through `apply(op)` with a pure
 * operation of model/ops (given the format's link keys); consecutive edits of one field make one undo step.
 */
import type { StateCreator } from 'zustand';
import type { Block, Diagram } from '../api/types';
import type { LinkKeys } from '../model/format';
import { parseEdgeId } from '../model/graph';
import { clearOffset, moveBlocks, paste as pasteOp, removeBlocks, removeLink, type Position } from '../model/ops';
import { NODE_HEIGHT, NODE_WIDTH } from '../model/sizes';
import { blockBox } from '../model/placement';
import { pasteShift } from './canvasTools';
import type { StudioState } from './index';
import type { XY } from './ui';

export interface ApplyOptions {
  /** consecutive edits with the same key (e.g. typing in one field) make one undo step */
  coalesce?: string;
}

export type Edit = (diagram: Diagram, keys: LinkKeys) => Diagram;

export interface DocumentSlice {
  diagram: Diagram | null;
  past: Diagram[];
  future: Diagram[];
  clipboard: Block[];
  pasteCount: number;

  /** true when the edit is made (or changes nothing); false when it is refused (read-only, an error: toasted) */
  apply: (op: Edit, opts?: ApplyOptions) => boolean;
  undo: () => void;
  redo: () => void;
  /** a diagram read from the file: the history starts again unless `keepHistory` (a reload of the same file) */
  replaceDocument: (diagram: Diagram | null, opts?: { keepHistory?: boolean }) => void;
  /**
   * a diagram read from a text becomes the document (one undo step; its problems came with it): with `text`, the
   * YAML pane's text it was read from (the pane holds the document); without, a text from elsewhere (a draft), which
   * the pane then follows as it follows the canvas
   */
  adoptDiagram: (diagram: Diagram, text?: string) => void;
  /** blocks put down where a drag or the arrow keys left them: one edit, and the drag is over */
  moveTo: (positions: Record<string, XY>) => void;
  copy: () => void;
  pasteClipboard: () => void;
  deleteSelection: () => void;
}

const HISTORY_LIMIT = 200;

/**
 * `next` with the blocks (and the whole) of `before` where they are equal: a text read again after one keystroke
 * changes one block, so the canvas redraws that block's node only.
 */
export function sharing(before: Diagram, next: Diagram): Diagram {
  const old = new Map(before.blocks.map((b) => [b.id, b]));
  let same = before.blocks.length === next.blocks.length;
  const blocks = next.blocks.map((b, i) => {
    const was = old.get(b.id);
    const kept = was && JSON.stringify(was) === JSON.stringify(b) ? was : b;
    if (kept !== before.blocks[i]) same = false;
    return kept;
  });
  const { blocks: _a, ...restBefore } = before;
  const { blocks: _b, ...restNext } = next;
  if (same && JSON.stringify(restBefore) === JSON.stringify(restNext)) return before;
  return { ...next, blocks };
}
const COALESCE_MS = 1500;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export const createDocumentSlice: StateCreator<StudioState, [], [], DocumentSlice> = (set, get) => {
  let coalesceKey: string | null = null;
  let coalesceAt = 0;

  return {
    diagram: null,
    past: [],
    future: [],
    clipboard: [],
    pasteCount: 0,

    apply(op, opts = {}) {
      const { diagram, past, links, session } = get();
      if (!diagram) return false;
      if (session?.read_only) {
        get().toast('read-only session: edits are disabled', 'warning');
        return false;
      }
      if (!links) {
        get().toast('the studio is still loading the block types', 'warning');
        return false;
      }
      let next: Diagram;
      try {
        next = op(diagram, links);
      } catch (e) {
        get().toast(message(e), 'error');
        return false;
      }
      if (next === diagram) return true;
      const now = Date.now();
      const merge = !!opts.coalesce && opts.coalesce === coalesceKey && now - coalesceAt < COALESCE_MS && past.length > 0;
      coalesceKey = opts.coalesce ?? null;
      coalesceAt = now;
      set({ diagram: next, past: merge ? past : [...past, diagram].slice(-HISTORY_LIMIT), future: [] });
      get().scheduleValidate();
      return true;
    },

    undo() {
      const { past, future, diagram, session } = get();
      if (!past.length || !diagram || session?.read_only) return;
      coalesceKey = null;
      set({ diagram: past[past.length - 1], past: past.slice(0, -1), future: [diagram, ...future] });
      get().scheduleValidate();
    },

    redo() {
      const { past, future, diagram, session } = get();
      if (!future.length || !diagram || session?.read_only) return;
      coalesceKey = null;
      set({ diagram: future[0], past: [...past, diagram], future: future.slice(1) });
      get().scheduleValidate();
    },

    replaceDocument(diagram, opts = {}) {
      coalesceKey = null;
      set({ diagram, past: opts.keepHistory ? get().past : [], future: opts.keepHistory ? get().future : [], pasteCount: 0 });
    },

    adoptDiagram(read, text) {
      const { diagram, past } = get();
      const next = diagram ? sharing(diagram, read) : read;
      // the pane's text and the document it holds change together: a text that is not the pane's must not claim it
      const pane = text === undefined ? {} : { sourceFor: next, sourceBase: text };
      if (next === diagram) {
        set(pane);
        return;
      }
      const merge = coalesceKey === 'source' && Date.now() - coalesceAt < COALESCE_MS && past.length > 0;
      coalesceKey = 'source';
      coalesceAt = Date.now();
      set({ diagram: next, ...pane, past: merge || !diagram ? past : [...past, diagram].slice(-HISTORY_LIMIT), future: [] });
    },

    moveTo(positions) {
      const dragged = get().dragging;
      const places: Record<string, Position> = {};
      for (const [id, p] of Object.entries(positions)) places[id] = [p.x, p.y];
      // a drag is one undo step; steps of the arrow keys on the same blocks make one together
      const byKeys = !Object.keys(positions).some((id) => dragged && id in dragged);
      if (Object.keys(places).length) {
        get().apply((d) => moveBlocks(d, places), byKeys ? { coalesce: `move:${Object.keys(places).sort().join(',')}` } : undefined);
      }
      if (dragged) set({ dragging: null });
    },

    copy() {
      const { diagram, selection } = get();
      if (!diagram || !selection.length) return;
      // each copy keeps its place (where the layout drew it, if unwritten): pasted in another file, the copies keep
      // their layout
      const laid = get().layout?.nodes ?? {};
      const blocks = diagram.blocks.filter((b) => selection.includes(b.id))
        .map((b) => (Array.isArray(b.position) || !laid[b.id] ? b : { ...b, position: [Math.round(laid[b.id].x), Math.round(laid[b.id].y)] as [number, number] }));
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
      const ok = get().apply((d, keys) => {
        for (const b of d.blocks) if (Array.isArray(b.position)) positions[b.id] = [Number(b.position[0]) || 0, Number(b.position[1]) || 0];
        const copies = clipboard.map((b) => (Array.isArray(b.position) ? b.position as Position : positions[b.id] ?? [0, 0]));
        // at the pointer (or the view's centre), clear of the blocks there; with no view (tests), below the originals
        const shift = pasteShift(copies.map(([x, y]) => ({ x, y })), Object.values(positions).map(([x, y]) => blockBox({ x, y })));
        const offset: Position = shift ? [shift.x, shift.y] : clearOffset(copies, Object.values(positions), { width: NODE_WIDTH, height: NODE_HEIGHT });
        const r = pasteOp(d, keys, clipboard, offset, positions);
        ids = r.ids;
        return r.diagram;
      });
      if (ok) set({ pasteCount: n, selection: ids, selectedEdge: null });
    },

    deleteSelection() {
      const { selection, selectedEdge } = get();
      if (selection.length) {
        if (get().apply((d, keys) => removeBlocks(d, keys, selection))) set({ selection: [], selectedEdge: null });
      } else if (selectedEdge) {
        const e = parseEdgeId(selectedEdge);
        if (e && get().apply((d, keys) => removeLink(d, keys, e.source, e.kind, e.index))) set({ selectedEdge: null });
      }
    },
  };
};
