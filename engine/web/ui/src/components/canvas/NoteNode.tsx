/**
 * A sticky note (Markdown, sanitized: marked renders, DOMPurify keeps no script, handler or raw HTML that runs) or a
 * labelled frame drawn behind the blocks it groups. Both live in the diagram's `notes:` (model/notes); double-click
 * (or Enter) edits the text in place, the corner handles resize, a drag moves (a frame carries its blocks).
 */
import { memo, useMemo, useState, type KeyboardEvent } from 'react';
import { NodeResizer, type Node, type NodeProps } from '@xyflow/react';
import DOMPurify from 'dompurify';
import { marked } from 'marked';
import type { Note } from '../../model/notes';
import { useStudio } from '../../store';

export type NoteNodeData = { index: number; note: Note; readOnly: boolean };
export type NoteNodeType = Node<NoteNodeData, 'note'>;

/** The note's Markdown as safe HTML: no raw HTML survives but the tags Markdown itself writes. */
export function noteHtml(text: string): string {
  const html = marked.parse(text, { async: false, gfm: true, breaks: true });
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true }, FORBID_TAGS: ['style', 'form', 'input', 'button', 'iframe'] });
}

const COLOURS = new Set(['yellow', 'blue', 'green', 'pink', 'purple', 'grey']);

function NoteNodeView({ data, selected }: NodeProps<NoteNodeType>) {
  const { index, note, readOnly } = data;
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(note.text ?? '');
  const html = useMemo(() => (note.frame ? '' : noteHtml(note.text ?? '')), [note.text, note.frame]);
  const colour = note.color && COLOURS.has(note.color) ? note.color : note.frame ? 'grey' : 'yellow';
  const custom = note.color && !COLOURS.has(note.color) ? { ['--note' as string]: note.color } : undefined;
  const s = useStudio.getState;
  const start = () => {
    if (readOnly) return;
    setDraft(note.text ?? '');
    setEditing(true);
  };
  const finish = (keep: boolean) => {
    setEditing(false);
    if (keep && draft !== (note.text ?? '')) s().editNote(index, { text: draft });
  };
  const onKey = (e: KeyboardEvent) => {
    e.stopPropagation(); // the canvas's shortcuts (Delete, F, ?) are not for the note's text
    if (e.key === 'Escape') finish(false);
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey || (note.frame && !e.shiftKey))) { e.preventDefault(); finish(true); }
  };
  const resizer = !readOnly && (
    <NodeResizer isVisible={selected} minWidth={60} minHeight={40} lineClassName="note-node__edge" handleClassName="note-node__corner"
      onResize={(_, p) => s().setNoteDraft({ index, box: { x: p.x, y: p.y, width: p.width, height: p.height } })}
      onResizeEnd={(_, p) => s().putNote(index, { x: p.x, y: p.y, width: p.width, height: p.height }, true)} />
  );
  const editor = editing && (note.frame
    ? <input className="note-node__editor nodrag nowheel" aria-label="Frame label" autoFocus value={draft}
      onChange={(e) => setDraft(e.target.value)} onBlur={() => finish(true)} onKeyDown={onKey} />
    : <textarea className="note-node__editor nodrag nowheel" aria-label="Note text (Markdown)" autoFocus value={draft}
      onChange={(e) => setDraft(e.target.value)} onBlur={() => finish(true)} onKeyDown={onKey} />);
  if (note.frame) {
    return (
      <div className={`frame-node frame-node--${colour}${selected ? ' is-selected' : ''}`} style={custom} data-testid={`note-${index}`}
        onDoubleClick={start}>
        {resizer}
        <div className="frame-node__label" title="Double-click to rename">{editor || note.text || 'Group'}</div>
      </div>
    );
  }
  return (
    <div className={`note-node note-node--${colour}${selected ? ' is-selected' : ''}`} style={custom} data-testid={`note-${index}`}
      onDoubleClick={start} onKeyDown={(e) => { if (e.key === 'Enter' && !editing && selected) { e.preventDefault(); start(); } }}>
      {resizer}
      {editor || <div className="note-node__text" dangerouslySetInnerHTML={{ __html: html }} />}
    </div>
  );
}

export const NoteNode = memo(NoteNodeView);

/** The notes as nodes: frames behind everything, notes behind the blocks; a note being moved or resized where it is now. */
export function noteNodes(notes: readonly Note[], selectedNote: number | null, draft: { index: number; box: { x: number; y: number; width: number; height: number } } | null,
  readOnly: boolean): NoteNodeType[] {
  return notes.map((note, index) => {
    const box = draft && draft.index === index ? draft.box
      : { x: note.x, y: note.y, width: note.width ?? 240, height: note.height ?? 120 };
    return {
      id: `note:${index}`,
      type: 'note' as const,
      position: { x: box.x, y: box.y },
      width: box.width,
      height: box.height,
      style: { width: box.width, height: box.height },
      selected: selectedNote === index,
      zIndex: note.frame ? -2 : -1,
      connectable: false,
      draggable: !readOnly,
      ariaLabel: `${note.frame ? 'Frame' : 'Note'} ${index + 1}: ${(note.text ?? '').slice(0, 60)}`,
      data: { index, note, readOnly },
    };
  });
}
