import { describe, expect, it } from 'vitest';
import type { Diagram } from '../api/types';
import { addNote, frameAround, inside, moveNote, notesOf, removeNote, resizeNote, setNoteText, updateNote } from './notes';

const base: Diagram = { diagram: 'd', blocks: [{ id: 'start', type: 'Start', position: [0, 0] }] };

describe('notes operations', () => {
  it('adds a note with rounded place and default size, keeping the blocks', () => {
    const { diagram, index } = addNote(base, { text: '# Hi', x: 10.4, y: 20.6, color: 'yellow' });
    expect(index).toBe(0);
    expect(diagram.notes).toEqual([{ text: '# Hi', x: 10, y: 21, width: 240, height: 120, color: 'yellow' }]);
    expect(diagram.blocks).toBe(base.blocks);
    expect(Object.keys(diagram)).toEqual(['diagram', 'blocks', 'notes']);
  });

  it('moves, resizes and edits one note, leaving the others the same objects', () => {
    let d = addNote(addNote(base, { text: 'a', x: 0, y: 0 }).diagram, { text: 'b', x: 300, y: 0 }).diagram;
    const second = notesOf(d)[1];
    d = moveNote(d, 0, 50.2, 60);
    expect(notesOf(d)[0]).toEqual({ text: 'a', x: 50, y: 60, width: 240, height: 120 });
    expect(notesOf(d)[1]).toBe(second);
    d = resizeNote(d, 0, { x: 40, y: 50, width: 10, height: 300 });
    expect(notesOf(d)[0]).toMatchObject({ x: 40, y: 50, width: 40, height: 300 });
    d = setNoteText(d, 0, '**bold**');
    expect(notesOf(d)[0].text).toBe('**bold**');
    expect(Object.keys(notesOf(d)[0])).toEqual(['text', 'x', 'y', 'width', 'height']);
  });

  it('changes nothing when nothing changes', () => {
    const d = addNote(base, { text: 'a', x: 0, y: 0 }).diagram;
    expect(moveNote(d, 0, 0, 0)).toBe(d);
    expect(updateNote(d, 0, { color: undefined })).toBe(d);
  });

  it('removes a note, and the notes key with the last one', () => {
    const d = addNote(addNote(base, { text: 'a', x: 0, y: 0 }).diagram, { text: 'b', x: 1, y: 1, color: 'blue' }).diagram;
    const one = removeNote(d, 0);
    expect(notesOf(one).map((n) => n.text)).toEqual(['b']);
    expect(removeNote(one, 0)).toEqual(base);
    expect(() => removeNote(base, 0)).toThrow('no note 0');
  });

  it('frames blocks with room for the label, and knows which blocks it holds', () => {
    const f = frameAround([{ x: 0, y: 0, width: 220, height: 76 }, { x: 300, y: 100, width: 220, height: 76 }], 'Retries');
    expect(f).toEqual({ text: 'Retries', x: -24, y: -40, width: 568, height: 240, frame: true });
    expect(inside(f, { x: 300, y: 100, width: 220, height: 76 })).toBe(true);
    expect(inside(f, { x: 600, y: 100, width: 220, height: 76 })).toBe(false);
    const d = addNote(base, f).diagram;
    expect(notesOf(d)[0].frame).toBe(true);
    expect(notesOf(updateNote(d, 0, { frame: false }))[0]).not.toHaveProperty('frame');
  });
});
