import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createStudio } from './index';
import { canvasView, blockPlaces } from './canvasTools';
import { overlaps, blockBox } from '../model/placement';
import { noteHtml } from '../components/canvas/NoteNode';
import { format, keys, loopDiagram, palette } from '../test/fixtures';
import { basics, emptyCompiled, fakeServer, session } from '../test/server';
import type { Diagram } from '../api/types';

let studio: ReturnType<typeof createStudio>;
const oneBlock = (): Diagram => ({ diagram: 'd', blocks: [{ id: 'start', type: 'Start', position: [0, 0] }] });

beforeEach(() => {
  vi.useFakeTimers();
  fakeServer({ ...basics(), 'POST /api/validate': () => ({ problems: [], compiled: emptyCompiled, valid: true, registries: [] }) });
  studio = createStudio();
  const d = oneBlock();
  studio.setState({ diagram: d, saved: d, path: 'd.yaml', session, format, palette, links: keys });
  // the view's centre is on Start's middle: where a block added "at the centre" would hide it
  canvasView.centre = () => ({ x: 110, y: 38 });
});

afterEach(() => {
  canvasView.centre = null;
  canvasView.pointer = null;
  vi.clearAllTimers();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

function noOverlaps(d: Diagram): void {
  const boxes = [...blockPlaces(d, null).values()].map(blockBox);
  for (const a of boxes) for (const b of boxes) if (a !== b) expect(overlaps(a, b)).toBe(false);
}

describe('adding blocks where none is (issue 43)', () => {
  it('adds five blocks from the palette on a one-block diagram, none over another', () => {
    for (let i = 0; i < 5; i++) {
      studio.getState().select([], null);
      studio.getState().addFromPalette('Set');
    }
    const d = studio.getState().diagram!;
    expect(d.blocks).toHaveLength(6);
    noOverlaps(d);
  });

  it('puts a block after the selected one, to its right', () => {
    studio.getState().select(['start'], null);
    studio.getState().addFromPalette('Set');
    const added = studio.getState().diagram!.blocks[1];
    expect(added.position![0]).toBeGreaterThan(220);
    expect(added.position![1]).toBe(0);
    expect(studio.getState().selection).toEqual([added.id]);
  });

  it('links a block added from a handle: next, then a port of a Loop', () => {
    const id = studio.getState().addBlockNear('Set', { x: 0, y: 0 }, { source: 'start', handle: 'next' });
    expect(studio.getState().diagram!.blocks[0].next).toBe(id);
    noOverlaps(studio.getState().diagram!);
    studio.getState().replaceDocument(loopDiagram());
    const loop = studio.getState().diagram!.blocks.find((b) => b.type === 'Loop')!;
    const body = studio.getState().addBlockNear('Set', { x: 0, y: 0 }, { source: loop.id, handle: 'body' });
    expect(studio.getState().diagram!.blocks.find((b) => b.id === loop.id)!.body).toBe(body);
  });

  it('pastes at the pointer, keeping the copies\' layout, clear of the blocks there', () => {
    studio.getState().apply((d) => ({ ...d, blocks: [...d.blocks, { id: 'b', type: 'Set', position: [300, 0] }] }));
    studio.getState().select(['start', 'b'], null);
    studio.getState().copy();
    canvasView.pointer = () => ({ x: 2000, y: 2000 });
    studio.getState().pasteClipboard();
    const d = studio.getState().diagram!;
    const [p1, p2] = d.blocks.slice(2).map((b) => b.position!);
    expect(p2[0] - p1[0]).toBe(300);
    expect(Math.abs((p1[0] + p2[0] + 220) / 2 - 2000)).toBeLessThanOrEqual(1);
    // pasted again at the same place: moved clear of the first copies
    studio.getState().pasteClipboard();
    noOverlaps(studio.getState().diagram!);
  });
});

describe('align, group and notes', () => {
  it('aligns the selection in one undo step, and groups it in a frame', () => {
    studio.getState().apply((d) => ({ ...d, blocks: [...d.blocks, { id: 'b', type: 'Set', position: [300, 90] }] }));
    const before = studio.getState().past.length;
    studio.getState().select(['start', 'b'], null);
    studio.getState().alignSelection('top');
    expect(studio.getState().diagram!.blocks[1].position).toEqual([300, 0]);
    expect(studio.getState().past.length).toBe(before + 1);
    studio.getState().groupSelection('Intake');
    expect(studio.getState().diagram!.notes).toEqual([{ text: 'Intake', x: -24, y: -40, width: 568, height: 140, frame: true }]);
    // a frame moved carries its blocks
    studio.getState().putNote(0, { x: 76, y: -40, width: 568, height: 140 }, false);
    expect(studio.getState().diagram!.blocks.map((b) => b.position)).toEqual([[100, 0], [400, 0]]);
  });

  it('adds, edits and deletes a note', () => {
    studio.getState().addNoteHere();
    expect(studio.getState().selectedNote).toBe(0);
    studio.getState().editNote(0, { text: '# Plan' });
    expect(studio.getState().diagram!.notes![0].text).toBe('# Plan');
    studio.getState().deleteNote(0);
    expect(studio.getState().diagram).not.toHaveProperty('notes');
  });

  it('renders a note\'s Markdown without running any HTML', () => {
    const html = noteHtml('# Title\n\n**bold** <img src=x onerror="alert(1)"><script>alert(2)</script> [a](javascript:alert(3))');
    expect(html).toContain('<h1>Title</h1>');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).not.toMatch(/onerror|<script|javascript:/);
  });
});
