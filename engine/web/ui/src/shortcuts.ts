/** Keyboard shortcuts (the help panel lists this table). */
import { useEffect } from 'react';
import { useStudio } from './store';
import { useArrowMoves } from './keyMoves';
import type { Alignment, Axis } from './model/align';
import { askGroup } from './components/canvas/SelectionToolbar';

export const SHORTCUTS: Array<[string, string]> = [
  ['Ctrl+S', 'Save the diagram'],
  ['Ctrl+Z', 'Undo'],
  ['Ctrl+Shift+Z / Ctrl+Y', 'Redo'],
  ['Ctrl+C', 'Copy the selected blocks'],
  ['Ctrl+V', 'Paste (new ids, offset, links between pasted blocks kept)'],
  ['Ctrl+X', 'Cut the selected blocks'],
  ['Ctrl+D', 'Duplicate the selected blocks'],
  ['Ctrl+A', 'Select every block'],
  ['← ↑ → ↓', 'Move the selected blocks 10 px (with Shift: 50 px); Tab walks the blocks and links, Enter selects one'],
  ['Delete / Backspace', 'Delete the selected blocks (and links to them) or the selected link'],
  ['Escape', 'Clear the selection, close dialogs'],
  ['F', 'Fit the diagram to the view'],
  ['Ctrl+K / Ctrl+F', 'Find a block by id, label, type or text (Enter, ↑ ↓: the next match); in the YAML pane Ctrl+F searches the text'],
  ['Double-click a Subdiagram', 'Open its child diagram (the breadcrumbs lead back)'],
  ['Alt+Shift+L / C / R', 'Align the selected blocks left, center, right'],
  ['Alt+Shift+T / M / B', 'Align the selected blocks top, middle, bottom'],
  ['Alt+Shift+H / V', 'Distribute the selected blocks horizontally, vertically'],
  ['Ctrl+G', 'Group the selected blocks in a labelled frame'],
  ['N', 'Add a sticky note at the pointer (Markdown; double-click edits it)'],
  ['+ beside a handle', 'Add a block linked from that handle (also: drop a link on the empty canvas)'],
  ['?', 'Show this help'],
  ['Shift + drag', 'Select blocks in a box'],
  ['Ctrl + click', 'Add a block to the selection'],
  ['Drag from ● right', 'Next link (several links: ordered, each with an optional when)'],
  ['Drag from ● bottom', 'Error link (on_error)'],
  ['Drag from ● body', 'Loop body link'],
  ['Ctrl+Space in a template', 'Offer names in scope inside {{ }}'],
];

const ALIGN_KEYS: Record<string, Alignment> = { KeyL: 'left', KeyC: 'center', KeyR: 'right', KeyT: 'top', KeyM: 'middle', KeyB: 'bottom' };
const SPREAD_KEYS: Record<string, Axis> = { KeyH: 'horizontal', KeyV: 'vertical' };

/** Alt+Shift with a letter: align or distribute the selection (by the key's place: Alt changes the letter typed). */
function canvasKey(e: KeyboardEvent): boolean {
  const s = useStudio.getState();
  if (s.selection.length < 2) return false;
  if (ALIGN_KEYS[e.code]) s.alignSelection(ALIGN_KEYS[e.code]);
  else if (SPREAD_KEYS[e.code]) s.distributeSelection(SPREAD_KEYS[e.code]);
  else return false;
  return true;
}

function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName);
}

export function useShortcuts(fitView: () => void): void {
  useArrowMoves();
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const s = useStudio.getState();
      const mod = e.ctrlKey || e.metaKey;
      const key = e.key.toLowerCase();
      if (mod && key === 's') {
        e.preventDefault();
        void s.save();
        return;
      }
      if (e.key === 'Escape') {
        if (s.dialog) { s.setDialog(null); return; }
        if (s.helpOpen) { s.setHelp(false); return; }
        if (s.searchOpen) { s.setSearchOpen(false); return; }
        if (!isTyping(e.target)) s.select([], null);
        return;
      }
      if (s.dialog || isTyping(e.target)) return;
      if (mod && (key === 'k' || key === 'f') && !e.shiftKey && !e.altKey) { e.preventDefault(); s.setSearchOpen(true); return; }
      if (mod && key === 'z' && !e.shiftKey) { e.preventDefault(); s.undo(); return; }
      if ((mod && key === 'z' && e.shiftKey) || (mod && key === 'y')) { e.preventDefault(); s.redo(); return; }
      if (mod && key === 'c') { if (s.selection.length) { e.preventDefault(); s.copy(); } return; }
      if (mod && key === 'x') { if (s.selection.length) { e.preventDefault(); s.copy(); s.deleteSelection(); } return; }
      if (mod && key === 'v') { if (s.clipboard.length) { e.preventDefault(); s.pasteClipboard(); } return; }
      if (mod && key === 'd') { if (s.selection.length) { e.preventDefault(); s.copy(); s.pasteClipboard(); } return; }
      if (mod && key === 'a') { e.preventDefault(); s.select(s.diagram?.blocks.map((b) => b.id) ?? [], null); return; }
      if (e.altKey && e.shiftKey && !mod && canvasKey(e)) { e.preventDefault(); return; }
      if (mod && key === 'g' && !e.shiftKey) { if (s.selection.length) { e.preventDefault(); askGroup(); } return; }
      if (key === 'n' && !mod && !e.altKey && !e.shiftKey && s.diagram && !s.session?.read_only) { e.preventDefault(); s.addNoteHere(); return; }
      if ((e.key === 'Delete' || e.key === 'Backspace') && !s.selection.length && !s.selectedEdge && s.selectedNote !== null
        && s.diagram?.notes?.[s.selectedNote]) { e.preventDefault(); s.deleteNote(s.selectedNote); return; }
      if (e.key === 'Delete' || e.key === 'Backspace') { e.preventDefault(); s.deleteSelection(); return; }
      if (e.key === '?') { e.preventDefault(); s.setHelp(!s.helpOpen); return; }
      if (key === 'f' && !mod && !e.altKey) { e.preventDefault(); fitView(); }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [fitView]);
}
