/** Every problem of the diagram; a click selects the block. */
import type { Problem } from '../../api/types';
import { paneShown, useStudio } from '../../store';

/** Where a problem is: its block and field, or the other file it is in (a registry, a CSV), and its line. */
export function where(p: Problem): string {
  const parts = [p.file ?? p.block ?? 'diagram'];
  if (p.file && p.block) parts.push(p.block);
  if (p.field) parts.push(p.field);
  if (p.line !== null) parts.push(`line ${p.line}`);
  return parts.join(' · ');
}

export function ProblemsPanel() {
  const problems = useStudio((s) => s.problems);
  const validating = useStudio((s) => s.validating);
  if (!problems.length) {
    return <div className="empty-state"><strong>No problems.</strong><div className="muted small">{validating ? 'checking…' : 'The diagram validates.'}</div></div>;
  }
  return (
    <ul className="problems" aria-label="Problems">
      {problems.map((p, i) => (
        <li key={i} className={`problem-row problem--${p.severity}`}>
          <button type="button" className="problem-row__btn" disabled={!p.block && (p.line === null || p.file !== null)}
            onClick={() => {
              const s = useStudio.getState();
              if (p.block) s.focusBlock(p.block, p.field);
              // a problem of the text itself (not YAML, no blocks yet): its line in the YAML pane
              if (p.line !== null && p.file === null && (!p.block || paneShown(s))) {
                s.setPaneOpen(true);
                useStudio.setState({ revealLine: p.line });
              }
            }}>
            <span className={`sev sev--${p.severity}`}>{p.severity}</span>
            <span className="problem-row__where">
              {where(p)}
            </span>
            <span className="problem-row__msg">{p.message}</span>
            {p.hint && <span className="problem__hint">{p.hint}</span>}
          </button>
        </li>
      ))}
    </ul>
  );
}
