/**
 * Over the canvas while several blocks are selected: align (left, center, right, top, middle, bottom), distribute
 * (horizontally, vertically) and group in a labelled frame; each one undo step. The keys are listed under `?`.
 */
import { useStudio } from '../../store';
import type { Alignment, Axis } from '../../model/align';

const ALIGN: Array<[Alignment, string, string]> = [
  ['left', '⇤', 'Alt+Shift+L'], ['center', '↔', 'Alt+Shift+C'], ['right', '⇥', 'Alt+Shift+R'],
  ['top', '⤒', 'Alt+Shift+T'], ['middle', '↕', 'Alt+Shift+M'], ['bottom', '⤓', 'Alt+Shift+B'],
];
const SPREAD: Array<[Axis, string, string]> = [['horizontal', '⋯', 'Alt+Shift+H'], ['vertical', '⋮', 'Alt+Shift+V']];

export function SelectionToolbar() {
  const count = useStudio((s) => s.selection.length);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  if (count < 2 || readOnly) return null;
  const s = useStudio.getState;
  return (
    <div className="selection-toolbar" role="toolbar" aria-label={`${count} blocks selected`}>
      {ALIGN.map(([how, glyph, keys]) => (
        <button key={how} type="button" className="tool-btn" title={`Align ${how} (${keys})`} aria-label={`Align ${how}`}
          onClick={() => s().alignSelection(how)}>{glyph}</button>
      ))}
      <span className="selection-toolbar__sep" />
      {SPREAD.map(([axis, glyph, keys]) => (
        <button key={axis} type="button" className="tool-btn" title={`Distribute ${axis}ly (${keys})`} aria-label={`Distribute ${axis}ly`}
          disabled={count < 3} onClick={() => s().distributeSelection(axis)}>{glyph}</button>
      ))}
      <span className="selection-toolbar__sep" />
      <button type="button" className="tool-btn selection-toolbar__group" title="Group in a frame (Ctrl+G)" aria-label="Group in a frame"
        onClick={() => askGroup()}>Group</button>
    </div>
  );
}

/** Asks the frame's label, then groups the selection. */
export function askGroup(): void {
  const s = useStudio.getState();
  if (!s.selection.length) return;
  s.setDialog({ title: 'Group the selected blocks', input: { label: 'Frame label', value: 'Group' }, confirm: 'Group',
    onConfirm: (label) => useStudio.getState().groupSelection(label.trim() || 'Group') });
}
