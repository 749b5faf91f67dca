/**
 * A text field for template strings: `{{ }}` highlighted in place, and the
 * names in scope (or jinja filters after `|`) offered inside `{{ }}`.
 */
import { useId, useLayoutEffect, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import { applyCompletion, completeAt, type Completion } from '../../model/completion';

export interface TemplateInputProps {
  id?: string;
  value: string;
  onChange: (value: string) => void;
  names: string[];
  extra?: string[];
  multiline?: boolean;
  placeholder?: string;
  ariaLabel?: string;
  invalid?: boolean;
  testId?: string;
  disabled?: boolean;
  onBlur?: () => void;
  autoFocus?: boolean;
}

export function highlight(text: string): ReactNode[] {
  const parts = text.split(/(\{\{[\s\S]*?(?:\}\}|$)|\{%[\s\S]*?(?:%\}|$))/);
  return parts.map((part, i) =>
    i % 2 === 1 ? <mark key={i} className="tpl__expr">{part}</mark> : <span key={i}>{part}</span>);
}

export function TemplateInput(props: TemplateInputProps) {
  const { value, onChange, names, extra, multiline, placeholder, ariaLabel, invalid, testId, disabled, onBlur, autoFocus } = props;
  const ref = useRef<HTMLTextAreaElement>(null);
  const listId = useId();
  const [completion, setCompletion] = useState<Completion | null>(null);
  const [active, setActive] = useState(0);
  const pendingCursor = useRef<number | null>(null);

  useLayoutEffect(() => {
    if (pendingCursor.current !== null && ref.current) {
      ref.current.setSelectionRange(pendingCursor.current, pendingCursor.current);
      pendingCursor.current = null;
    }
  });

  const refresh = (text: string, cursor: number) => {
    const c = completeAt(text, cursor, names, extra);
    setCompletion(c);
    setActive(0);
  };

  const accept = (option: string) => {
    if (!completion) return;
    const r = applyCompletion(value, completion, option);
    pendingCursor.current = r.cursor;
    onChange(r.text);
    setCompletion(null);
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (completion) {
      if (e.key === 'ArrowDown') { e.preventDefault(); setActive((a) => (a + 1) % completion.options.length); return; }
      if (e.key === 'ArrowUp') { e.preventDefault(); setActive((a) => (a - 1 + completion.options.length) % completion.options.length); return; }
      if (e.key === 'Enter' || e.key === 'Tab') { e.preventDefault(); accept(completion.options[active]); return; }
      if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); setCompletion(null); return; }
    }
    if (e.key === ' ' && e.ctrlKey) {
      e.preventDefault();
      const t = e.currentTarget;
      refresh(t.value, t.selectionStart);
      return;
    }
    if (e.key === 'Enter' && !multiline) e.preventDefault();
  };

  const shown = completion?.options.slice(0, 12) ?? [];
  return (
    <div className={`tpl${multiline ? ' tpl--multi' : ''}${invalid ? ' is-invalid' : ''}`}>
      <div className="tpl__hl" aria-hidden="true">{highlight(value)}{'\u200b\n'}</div>
      <textarea
        ref={ref}
        id={props.id}
        className="tpl__input"
        value={value}
        rows={1}
        spellCheck={false}
        placeholder={placeholder}
        aria-label={ariaLabel}
        aria-invalid={invalid || undefined}
        aria-autocomplete="list"
        aria-controls={completion ? listId : undefined}
        aria-activedescendant={completion ? `${listId}-${active}` : undefined}
        data-testid={testId}
        disabled={disabled}
        autoFocus={autoFocus}
        onChange={(e) => {
          onChange(e.target.value);
          refresh(e.target.value, e.target.selectionStart);
        }}
        onKeyDown={onKeyDown}
        onClick={(e) => refresh(e.currentTarget.value, e.currentTarget.selectionStart)}
        onBlur={() => {
          setCompletion(null);
          onBlur?.();
        }}
      />
      {completion && shown.length > 0 && (
        <ul className="completions" role="listbox" id={listId} aria-label={completion.kind === 'filter' ? 'filters' : 'names in scope'}>
          {shown.map((o, i) => (
            <li
              key={o}
              id={`${listId}-${i}`}
              role="option"
              aria-selected={i === active}
              className={i === active ? 'is-active' : undefined}
              onMouseDown={(e) => { e.preventDefault(); accept(o); }}
              onMouseEnter={() => setActive(i)}
            >
              <span className={`completions__kind completions__kind--${completion.kind}`}>{completion.kind === 'filter' ? 'filter' : 'name'}</span>
              {o}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
