/**
 * The canvas habits slice (issue 43): placing new blocks clear of the others (palette, a handle's "+", a link dropped
 * on the pane, paste), the quick-add search opened at a handle, align and distribute, frames and sticky notes. Every
 * edit is one `apply` of pure operations (model/ops, model/notes) with places from model/placement and model/align.
 * What the view knows (its centre, the pointer) comes from the canvas through `canvasView`, outside the store: a
 * pointer move must not wake every subscriber.
 */
import type { StateCreator } from 'zustand';
import type { Diagram } from '../api/types';
import { align, distribute, type Alignment, type Axis, type Placed } from '../model/align';
import { kindOfKey, type LinkKeys } from '../model/format';
import { parseEdgeId, diagramEdges } from '../model/graph';
import type { LayoutResult } from '../model/layout';
import { addNote, frameAround, inside, moveNote, notesOf, removeNote, resizeNote, setNoteText, updateNote, NOTE_SIZE, type Note } from '../model/notes';
import { addBlock, addLink, moveBlocks, type Position } from '../model/ops';
import { after, besideLink, blockBox, freeSpot, groupShift, type Box, type XY } from '../model/placement';
import { NODE_HEIGHT, NODE_WIDTH } from '../model/sizes';
import type { StudioState } from './index';

/** The quick-add search, open at a point of the page, for a block placed at `flow` (and linked from a handle). */
export interface QuickAdd {
  screen: XY;
  flow: XY;
  source?: string;
  /** the block key the link is written under: next, on_error, a port (Loop's body) */
  handle?: string;
}

/** What the canvas tells the store about the view; set by the canvas while it is shown. */
export const canvasView = {
  /** a point of the page in the canvas's coordinates */
  toFlow: null as ((p: XY) => XY) | null,
  /** the view's centre, in the canvas's coordinates */
  centre: null as (() => XY) | null,
  /** the pointer over the canvas, in the canvas's coordinates (null: not over it) */
  pointer: null as (() => XY | null) | null,
};

export interface CanvasToolsSlice {
  quickAdd: QuickAdd | null;
  /** the selected note (its place in `notes:`), apart from the blocks' selection */
  selectedNote: number | null;
  /** a note being dragged or resized: its box now (the document gets it when the gesture ends) */
  noteDraft: { index: number; box: Box } | null;

  /** a block of `type` at the first free place near `want` (its top-left), linked from `source`'s `handle` if given */
  addBlockNear: (type: string, want: XY, from?: { source: string; handle?: string }) => string | null;
  /** a block added from the palette: after the selected block, beside the selected link, else at the view's centre */
  addFromPalette: (type: string) => void;
  openQuickAdd: (q: QuickAdd | null) => void;
  alignSelection: (how: Alignment) => void;
  distributeSelection: (axis: Axis) => void;
  /** the selected blocks in a labelled frame (a note with frame: true) */
  groupSelection: (label?: string) => void;
  addNoteHere: () => void;
  selectNote: (index: number | null) => void;
  setNoteDraft: (draft: { index: number; box: Box } | null) => void;
  /** a note (a frame: with the blocks inside it) put down at `box` */
  putNote: (index: number, box: Box, resized: boolean) => void;
  editNote: (index: number, change: Partial<Note>) => void;
  deleteNote: (index: number) => void;
}

/** Each block's top-left corner: its written position, else where the layout put it. */
export function blockPlaces(diagram: Diagram | null, layout: LayoutResult | null): Map<string, XY> {
  const places = new Map<string, XY>();
  for (const b of diagram?.blocks ?? []) {
    const p = Array.isArray(b.position) ? { x: Number(b.position[0]) || 0, y: Number(b.position[1]) || 0 } : layout?.nodes[b.id];
    if (p) places.set(b.id, p);
  }
  return places;
}

function boxesOf(places: Map<string, XY>): Box[] {
  return [...places.values()].map(blockBox);
}

/** The view's centre as a block's top-left corner (a block centred there), or the origin before the canvas is shown. */
function centreSpot(): XY {
  const c = canvasView.centre?.() ?? { x: NODE_WIDTH / 2, y: NODE_HEIGHT / 2 };
  return { x: c.x - NODE_WIDTH / 2, y: c.y - NODE_HEIGHT / 2 };
}

export const createCanvasToolsSlice: StateCreator<StudioState, [], [], CanvasToolsSlice> = (set, get) => {
  const move = (positions: Record<string, XY>) => {
    const places: Record<string, Position> = {};
    for (const [id, p] of Object.entries(positions)) places[id] = [p.x, p.y];
    if (Object.keys(places).length) get().apply((d) => moveBlocks(d, places));
  };
  const selected = (): Placed[] => {
    const { diagram, layout, selection } = get();
    const places = blockPlaces(diagram, layout);
    return selection.flatMap((id) => {
      const p = places.get(id);
      return p ? [{ id, ...blockBox(p) }] : [];
    });
  };
  return {
    quickAdd: null,
    selectedNote: null,
    noteDraft: null,

    addBlockNear(type, want, from) {
      let id = '';
      const ok = get().apply((d, keys: LinkKeys) => {
        const spot = freeSpot(want, boxesOf(blockPlaces(d, get().layout)));
        const r = addBlock(d, type, [spot.x, spot.y]);
        id = r.id;
        return from ? addLink(r.diagram, keys, from.source, id, kindOfKey(from.handle ?? keys.next, keys)) : r.diagram;
      });
      if (!ok) return null;
      get().focusBlock(id);
      return id;
    },

    addFromPalette(type) {
      const { diagram, layout, selection, selectedEdge, links } = get();
      const places = blockPlaces(diagram, layout);
      let want = centreSpot();
      const edge = selectedEdge ? parseEdgeId(selectedEdge) : null;
      if (selection.length === 1 && places.has(selection[0])) want = after(places.get(selection[0])!);
      else if (edge && diagram && links) {
        const e = diagramEdges(diagram, links).find((x) => x.id === selectedEdge);
        const [s, t] = [places.get(edge.source), e ? places.get(e.target) : undefined];
        if (s && t) want = besideLink(s, t);
      }
      get().addBlockNear(type, want);
    },

    openQuickAdd(q) {
      set({ quickAdd: q });
    },

    alignSelection(how) {
      move(align(selected(), how));
    },

    distributeSelection(axis) {
      move(distribute(selected(), axis));
    },

    groupSelection(label = 'Group') {
      const boxes = selected();
      if (!boxes.length) return;
      let index = -1;
      const ok = get().apply((d) => {
        const r = addNote(d, frameAround(boxes, label));
        index = r.index;
        return r.diagram;
      });
      if (ok) set({ selectedNote: index });
    },

    addNoteHere() {
      const c = canvasView.pointer?.() ?? canvasView.centre?.() ?? { x: 0, y: 0 };
      let index = -1;
      const ok = get().apply((d) => {
        const r = addNote(d, { text: 'A note: **Markdown** works.', x: c.x - NOTE_SIZE.width / 2, y: c.y - NOTE_SIZE.height / 2, color: 'yellow' });
        index = r.index;
        return r.diagram;
      });
      if (ok) {
        get().select([], null);
        set({ selectedNote: index });
      }
    },

    selectNote(index) {
      if (get().selectedNote !== index) set({ selectedNote: index });
    },

    setNoteDraft(draft) {
      set({ noteDraft: draft });
    },

    putNote(index, box, resized) {
      const { diagram, layout } = get();
      const note = notesOf(diagram)[index];
      set({ noteDraft: null });
      if (!note) return;
      const dx = Math.round(box.x) - note.x;
      const dy = Math.round(box.y) - note.y;
      // a frame carries the blocks inside it when it is moved (not when it is resized)
      const members: Record<string, Position> = {};
      if (note.frame && !resized && (dx || dy)) {
        for (const [id, p] of blockPlaces(diagram, layout)) if (inside(note, blockBox(p))) members[id] = [p.x + dx, p.y + dy];
      }
      get().apply((d) => {
        const moved = resized ? resizeNote(d, index, box) : moveNote(d, index, box.x, box.y);
        return Object.keys(members).length ? moveBlocks(moved, members) : moved;
      });
    },

    editNote(index, change) {
      get().apply((d) => (change.text !== undefined && Object.keys(change).length === 1 ? setNoteText(d, index, change.text) : updateNote(d, index, change)),
        { coalesce: `note:${index}` });
    },

    deleteNote(index) {
      if (get().apply((d) => removeNote(d, index))) set({ selectedNote: null });
    },
  };
};

/** Where pasted blocks go: at the pointer (or the view's centre), their layout kept, clear of the blocks there. */
export function pasteShift(copies: XY[], taken: Box[]): XY | null {
  const at = canvasView.pointer?.() ?? canvasView.centre?.();
  if (!at) return null;
  return groupShift(copies, at, taken);
}
