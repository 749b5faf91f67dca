/**
 * Pinned outputs (issue 43): "Pin this output" on a request block's step, the block's Pinned output section (see,
 * type or change it, remove it) and the pin badge on its node. A pinned block's answer is taken from the pin in the
 * studio's runs (Run, Run from here) instead of asking its vendor, and `diagrama test` runs the pins scenario.
 */
import { useEffect, useState } from 'react';
import type { Step } from '../../api/types';
import { useStudio } from '../../store';
import { usePins } from '../../store/pins';

/** The output a request block's step answered: its `result` (text, or the structured answer). */
export function stepOutput(step: Step): unknown {
  const outputs = step.outputs as Record<string, unknown> | null;
  return outputs && 'result' in outputs ? outputs.result : undefined;
}

const shown = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

/** Keeps the pins store on the open file. */
export function usePinsOfOpenFile(): void {
  const path = useStudio((s) => s.path);
  useEffect(() => { void usePins.getState().load(path).catch(() => undefined); }, [path]);
}

export function PinThisOutput({ step }: { step: Step }) {
  const path = useStudio((s) => s.path);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const output = stepOutput(step);
  const pinned = usePins((s) => step.block in s.pinned);
  if (!path || readOnly || output === undefined || output === null) return null;
  const pin = async () => {
    try {
      await usePins.getState().pin(path, step.block, output);
      useStudio.getState().toast(`Pinned ${step.block}'s output: runs take it instead of asking`, 'success');
    } catch (e) {
      useStudio.getState().toast(`Could not pin: ${(e as Error).message}`, 'error');
    }
  };
  return (
    <button type="button" className="btn btn--small pin-this" onClick={pin} data-testid={`pin-${step.block}`}>
      📌 {pinned ? 'Pin this output instead' : 'Pin this output'}
    </button>
  );
}

/** The block's pinned output: shown, typed by hand or changed, removed. */
export function BlockPin({ block }: { block: string }) {
  const path = useStudio((s) => s.path);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const value = usePins((s) => s.pinned[block]);
  const file = usePins((s) => s.file);
  const [typed, setTyped] = useState<string | null>(null);
  if (!path) return null;
  const has = value !== undefined;
  const save = async () => {
    if (typed === null) return;
    try {
      await usePins.getState().pin(path, block, typed);
      setTyped(null);
    } catch (e) {
      useStudio.getState().toast(`Could not pin: ${(e as Error).message}`, 'error');
    }
  };
  return (
    <section className="section pin-section" aria-label="Pinned output">
      <h3>Pinned output {has && <span className="muted">· in {file}</span>}</h3>
      {has && typed === null && <pre className="json pin-section__value" tabIndex={0} data-testid={`pinned-${block}`}>{shown(value)}</pre>}
      {typed !== null && (
        <textarea aria-label={`Pinned output of ${block}`} value={typed} rows={4} onChange={(e) => setTyped(e.target.value)} />
      )}
      {!readOnly && (
        <div className="row-gap">
          {typed === null
            ? <button type="button" className="btn btn--small" onClick={() => setTyped(has ? shown(value) : '')}>{has ? 'Edit pin' : 'Type an output to pin'}</button>
            : <button type="button" className="btn btn--small btn--primary" onClick={save}>Pin it</button>}
          {has && typed === null && (
            <button type="button" className="btn btn--small btn--danger" data-testid={`unpin-${block}`}
              onClick={() => void usePins.getState().unpin(path, block)}>Remove pin</button>
          )}
        </div>
      )}
      {!has && typed === null && <p className="muted small">Pin an output (here, or from a run's step) to run without asking this block's vendor.</p>}
    </section>
  );
}

/** The pin badge on a block's node. */
export function PinBadge({ block }: { block: string }) {
  const pinned = usePins((s) => block in s.pinned);
  if (!pinned) return null;
  return <span className="pin-badge" role="img" title="Its output is pinned: runs take it instead of asking" aria-label="output pinned" data-testid={`pin-badge-${block}`}>
    {/* drawn, not an emoji: a system without a colour-emoji font shows an empty box */}
    <svg width="12" height="12" viewBox="0 0 16 16" aria-hidden="true" focusable="false">
      <path d="M10 1l5 5-2 1-3 3 1 4-1 1-3.5-3.5L2 16l-1-1 4.5-4.5L2 7l1-1 4 1 3-3z" fill="currentColor" />
    </svg>
  </span>;
}
