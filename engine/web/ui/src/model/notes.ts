/**
 * The diagram's sticky notes and frames (top-level `notes:`, studio-only data the engine ignores): pure operations
 * over the diagram JSON, as model/ops's are. A note is found by its place in the list; an edit leaves the other
 * notes (and their keys' order) as they were, and the list goes when its last note does, so that the server writes
 * a minimal YAML change.
 */
import type { Diagram, NoteSpec } from '../api/types';
import { bounds, type Box } from './placement';

export type Note = NoteSpec;

export const NOTE_SIZE = { width: 240, height: 120 };
/** The room a frame keeps around the blocks it groups; its label sits in the top margin. */
export const FRAME_PADDING = { top: 40, side: 24, bottom: 24 };
export const NOTE_COLOURS = ['yellow', 'blue', 'green', 'pink', 'purple', 'grey'] as const;

export function notesOf(diagram: Diagram | null): Note[] {
  return Array.isArray(diagram?.notes) ? diagram.notes : [];
}

function withNotes(diagram: Diagram, notes: Note[]): Diagram {
  if (notes.length) return { ...diagram, notes };
  if (!('notes' in diagram)) return diagram;
  const copy = { ...diagram };
  delete copy.notes;
  return copy;
}

function checked(diagram: Diagram, index: number): Note[] {
  const notes = notesOf(diagram);
  if (index < 0 || index >= notes.length) throw new Error(`no note ${index}`);
  return notes;
}

/** Adds a note (or a frame) at the end of the list: its index is the list's old length. */
export function addNote(diagram: Diagram, note: Note): { diagram: Diagram; index: number } {
  const notes = notesOf(diagram);
  const clean: Note = { text: note.text ?? '', x: Math.round(note.x), y: Math.round(note.y),
    width: Math.round(note.width ?? NOTE_SIZE.width), height: Math.round(note.height ?? NOTE_SIZE.height) };
  if (note.color) clean.color = note.color;
  if (note.frame) clean.frame = true;
  return { diagram: withNotes(diagram, [...notes, clean]), index: notes.length };
}

/** Changes some keys of a note (`undefined` removes an optional one: color, frame); unchanged values keep the note. */
export function updateNote(diagram: Diagram, index: number, change: Partial<Note>): Diagram {
  const notes = checked(diagram, index);
  const old = notes[index];
  let note = old as unknown as Record<string, unknown>;
  for (const [key, raw] of Object.entries(change)) {
    const value = typeof raw === 'number' && key !== 'text' ? Math.round(raw) : raw;
    if (value === undefined || value === null || (key === 'frame' && value === false)) {
      if (key in note) {
        note = { ...note };
        delete note[key];
      }
    } else if (note[key] !== value) note = { ...note, [key]: value };
  }
  if (note === (old as unknown)) return diagram;
  return withNotes(diagram, notes.map((n, i) => (i === index ? (note as unknown as Note) : n)));
}

export function moveNote(diagram: Diagram, index: number, x: number, y: number): Diagram {
  return updateNote(diagram, index, { x, y });
}

export function resizeNote(diagram: Diagram, index: number, box: Box): Diagram {
  return updateNote(diagram, index, { x: box.x, y: box.y, width: Math.max(40, box.width), height: Math.max(30, box.height) });
}

export function setNoteText(diagram: Diagram, index: number, text: string): Diagram {
  return updateNote(diagram, index, { text });
}

/** Removes a note; the `notes:` key goes with the last one. */
export function removeNote(diagram: Diagram, index: number): Diagram {
  const notes = checked(diagram, index);
  return withNotes(diagram, notes.filter((_, i) => i !== index));
}

/** A frame around `boxes` (the grouped blocks), labelled `label`, its label in the top margin. */
export function frameAround(boxes: readonly Box[], label: string): Note {
  const b = bounds(boxes);
  return { text: label, x: b.x - FRAME_PADDING.side, y: b.y - FRAME_PADDING.top,
    width: b.width + 2 * FRAME_PADDING.side, height: b.height + FRAME_PADDING.top + FRAME_PADDING.bottom, frame: true };
}

/** Whether `box` lies wholly inside the note's box (a frame's members move with it). */
export function inside(note: Note, box: Box): boolean {
  const w = note.width ?? NOTE_SIZE.width;
  const h = note.height ?? NOTE_SIZE.height;
  return box.x >= note.x && box.y >= note.y && box.x + box.width <= note.x + w && box.y + box.height <= note.y + h;
}
