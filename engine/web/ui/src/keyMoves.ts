/**
 * Arrow keys move the selected blocks (10 px, with Shift 50 px), the canvas's keyboard equivalent of a drag: one undo
 * step for a run of presses on the same blocks (the store's moveTo). Listened for before React Flow's own handler on
 * a focused block (4 px steps on our 4 px grid), which it replaces; never while a field, a dialog or a menu has the keys.
 */
import { useEffect } from 'react';
import { useStudio } from './store';
import type { XY } from './store/ui';

export const ARROW_STEP = 10;
export const ARROW_STEP_SHIFT = 50;

const DIRECTIONS: Record<string, XY> = { ArrowLeft: { x: -1, y: 0 }, ArrowRight: { x: 1, y: 0 }, ArrowUp: { x: 0, y: -1 }, ArrowDown: { x: 0, y: 1 } };

/** How far an arrow key moves the selection; null for another key. */
export function arrowDelta(key: string, shift: boolean): XY | null {
  const d = DIRECTIONS[key];
  if (!d) return null;
  const step = shift ? ARROW_STEP_SHIFT : ARROW_STEP;
  return { x: d.x * step, y: d.y * step };
}

/** Where the keys are the canvas's: nothing focused, or a block, a link or the pane of the canvas. */
function onCanvas(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement) && !(target instanceof SVGElement)) return true;
  if (target === document.body || target === document.documentElement) return true;
  if (target instanceof HTMLElement && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName))) return false;
  return !!target.closest('.react-flow') && !target.closest('.react-flow__controls, .react-flow__minimap');
}

/** Moves the selected blocks for an arrow key; whether it did. */
export function moveSelectionByKey(e: Pick<KeyboardEvent, 'key' | 'shiftKey' | 'ctrlKey' | 'metaKey' | 'altKey' | 'target'>): boolean {
  if (e.ctrlKey || e.metaKey || e.altKey) return false;
  const delta = arrowDelta(e.key, e.shiftKey);
  if (!delta) return false;
  const s = useStudio.getState();
  if (!s.diagram || !s.selection.length || s.session?.read_only || s.dialog || s.helpOpen) return false;
  if (!onCanvas(e.target)) return false;
  const laid = s.layout?.nodes ?? {};
  const places: Record<string, XY> = {};
  for (const b of s.diagram.blocks) {
    if (!s.selection.includes(b.id)) continue;
    const at = Array.isArray(b.position) ? { x: Number(b.position[0]) || 0, y: Number(b.position[1]) || 0 } : laid[b.id];
    if (at) places[b.id] = { x: Math.round(at.x + delta.x), y: Math.round(at.y + delta.y) };
  }
  if (!Object.keys(places).length) return false;
  s.moveTo(places);
  return true;
}

/** The arrow keys on the window, in the capture phase: ahead of React Flow's handler on a focused block. */
export function useArrowMoves(): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (moveSelectionByKey(e)) {
        e.preventDefault();
        e.stopPropagation();
      }
    };
    window.addEventListener('keydown', onKey, true);
    return () => window.removeEventListener('keydown', onKey, true);
  }, []);
}
