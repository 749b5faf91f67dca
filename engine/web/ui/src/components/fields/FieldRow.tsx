import type { ReactNode } from 'react';
import type { Problem } from '../../api/types';

export function ProblemList({ problems }: { problems: Problem[] }) {
  if (!problems.length) return null;
  return (
    <ul className="field-problems">
      {problems.map((p, i) => (
        <li key={i} className={`problem problem--${p.severity}`}>
          {/* the alert inside the item: a list holds only items */}
          <span role={p.severity === 'error' ? 'alert' : undefined}>
            <span>{p.message}</span>
            {p.hint && <span className="problem__hint"> — {p.hint}</span>}
          </span>
        </li>
      ))}
    </ul>
  );
}

export interface FieldRowProps {
  htmlFor?: string;
  label: string;
  required?: boolean;
  description?: string;
  problems?: Problem[];
  onReset?: () => void;
  extra?: ReactNode;
  children: ReactNode;
  /** labels of grouped controls (tables) are not <label> elements */
  group?: boolean;
}

export function FieldRow({ htmlFor, label, required, description, problems = [], onReset, extra, children, group }: FieldRowProps) {
  const invalid = problems.some((p) => p.severity === 'error');
  return (
    <div className={`field${invalid ? ' field--invalid' : ''}`} role={group ? 'group' : undefined} aria-label={group ? label : undefined}>
      <div className="field__head">
        {group ? <span className="field__label">{label}</span> : <label className="field__label" htmlFor={htmlFor}>{label}</label>}
        {required && <span className="field__req" title="required">*</span>}
        <span className="field__spacer" />
        {extra}
        {onReset && (
          <button type="button" className="btn-link" onClick={onReset} aria-label={`Reset ${label} to its default`} title="remove this key (use the default)">
            reset
          </button>
        )}
      </div>
      {children}
      {description && <div className="field__help">{description}</div>}
      <ProblemList problems={problems} />
    </div>
  );
}
