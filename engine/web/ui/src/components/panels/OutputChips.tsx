/**
 * A block's outputs as chips in its "Set variables" section: a click inserts a reference to that output
 * (model/outputRef) at the cursor of the form's field last focused, or adds a `set` row holding it when no field was.
 */
import { useEffect, useRef, type RefObject } from 'react';
import { outputReference } from '../../model/outputRef';

type TextField = HTMLInputElement | HTMLTextAreaElement;
const TEXT_INPUTS = new Set(['', 'text', 'search', 'url', 'email']);

/** A field a reference can go in: a template or text field of the form, not a `set` key, the id or the label. */
export function insertable(el: EventTarget | null, form: HTMLElement): el is TextField {
  if (!(el instanceof HTMLTextAreaElement) && !(el instanceof HTMLInputElement)) return false;
  if (el instanceof HTMLInputElement && !TEXT_INPUTS.has(el.getAttribute('type') ?? '')) return false;
  if (el.disabled || el.readOnly || el.closest('.kv__key')) return false;
  const first = form.querySelector('.section');
  return !(first && first.contains(el) && first.querySelector('h3')?.textContent === 'Block');
}

/** Types `text` into a React-controlled field at its selection, as typing would (its onChange sees it). */
export function insertIntoField(el: TextField, text: string): void {
  const start = el.selectionStart ?? el.value.length;
  const end = el.selectionEnd ?? start;
  const next = el.value.slice(0, start) + text + el.value.slice(end);
  const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  Object.getOwnPropertyDescriptor(proto, 'value')?.set?.call(el, next);
  el.dispatchEvent(new Event('input', { bubbles: true }));
  el.focus();
  el.setSelectionRange(start + text.length, start + text.length);
}

export function OutputChips({ outputs, blockId, set, form, onAddSet }: {
  outputs: string[];
  blockId: string;
  set: unknown;
  form: RefObject<HTMLElement | null>;
  onAddSet: (key: string, value: string) => void;
}) {
  const last = useRef<TextField | null>(null);
  useEffect(() => {
    last.current = null; // another block's form: its fields are not this one's
    const root = form.current;
    if (!root) return;
    const onFocus = (e: FocusEvent) => { if (insertable(e.target, root)) last.current = e.target; };
    root.addEventListener('focusin', onFocus);
    return () => root.removeEventListener('focusin', onFocus);
  }, [form, blockId]);

  const insert = (output: string) => {
    const root = form.current;
    const field = last.current && root?.contains(last.current) && !last.current.disabled ? last.current : null;
    const ref = outputReference(output, set, !!field?.closest('[data-testid="field-set"]'));
    if (ref.addSet) onAddSet(ref.addSet.key, ref.addSet.value);
    if (field) insertIntoField(field, ref.text);
  };

  return (
    <div className="muted small" data-testid="output-chips">
      Outputs:{' '}
      {outputs.map((o) => (
        <button key={o} type="button" className="chip chip--insert" data-testid={`output-chip-${o}`}
          title={`Insert a reference to ${o} in the field you were editing (in this block's set: {{ ${o} }})`}
          // the field keeps its focus and its cursor
          onMouseDown={(e) => e.preventDefault()} onClick={() => insert(o)}>{o}</button>
      ))}
    </div>
  );
}
