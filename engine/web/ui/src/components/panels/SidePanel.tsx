/** The right-hand panel: Properties (block / link / diagram), Run, Chat (a diagram that keeps memory), Evaluations
 * (its recorded eval runs), Knowledge (a diagram with knowledge bases: the retrieval test), Problems. */
import { useMemo } from 'react';
import { useStudio, type PanelTab } from '../../store';
import { memoryNames } from '../../store/chat';
import { ChatPanel } from './ChatPanel';
import { BlockProperties } from './BlockProperties';
import { EdgeProperties } from './EdgeProperties';
import { DiagramProperties } from './DiagramProperties';
import { RunPanel } from './RunPanel';
import { EvalsPanel } from './EvalsPanel';
import { KnowledgePanel } from './KnowledgePanel';
import { ProblemsPanel } from './ProblemsPanel';
import { counts } from '../../model/problems';
import { hasKnowledge } from '../../model/knowledge';

const TABS: Array<[PanelTab, string]> = [['properties', 'Properties'], ['run', 'Run'], ['chat', 'Chat'], ['evals', 'Evaluations'],
  ['knowledge', 'Knowledge'], ['problems', 'Problems']];

export function SidePanel() {
  const tab = useStudio((s) => s.panelTab);
  const diagram = useStudio((s) => s.diagram);
  const selection = useStudio((s) => s.selection);
  const selectedEdge = useStudio((s) => s.selectedEdge);
  const palette = useStudio((s) => s.palette);
  const problems = useStudio((s) => s.problems);
  const run = useStudio((s) => s.run);
  const saved = useStudio((s) => s.saved);
  const c = counts(problems);
  // the chat talks to the saved file: its Start decides
  const chat = useMemo(() => memoryNames((saved ?? diagram)?.blocks ?? [], palette).length > 0, [saved, diagram, palette]);
  // the Knowledge tab for a diagram with knowledge bases, or a Retrieve block (its base may be a registry file's)
  const knowledge = useMemo(() => hasKnowledge(saved ?? diagram), [saved, diagram]);
  const tabs = TABS.filter(([t]) => (t !== 'chat' || chat) && (t !== 'knowledge' || knowledge));

  let body = null;
  if (tab === 'run') body = <RunPanel />;
  else if (tab === 'chat' && chat) body = <ChatPanel />;
  else if (tab === 'problems') body = <ProblemsPanel />;
  else if (tab === 'evals') body = <EvalsPanel />;
  else if (tab === 'knowledge' && knowledge) body = <KnowledgePanel />;
  else if (diagram) {
    const blocks = diagram.blocks.filter((b) => selection.includes(b.id));
    if (blocks.length === 1) {
      body = <BlockProperties key={blocks[0].id} block={blocks[0]} type={palette.find((t) => t.type === blocks[0].type)} diagram={diagram} />;
    } else if (blocks.length > 1) {
      body = (
        <div className="empty-state">
          <strong>{blocks.length} blocks selected</strong>
          <div className="muted small">{blocks.map((b) => b.id).join(', ')}</div>
          <div className="row-gap">
            <button type="button" className="btn" onClick={() => useStudio.getState().copy()}>Copy</button>
            <button type="button" className="btn btn--danger" onClick={() => useStudio.getState().deleteSelection()}>Delete</button>
          </div>
        </div>
      );
    } else if (selectedEdge) {
      body = <EdgeProperties diagram={diagram} edgeId={selectedEdge} />;
    } else {
      body = <DiagramProperties diagram={diagram} />;
    }
  }

  return (
    <aside className="side-panel" aria-label="Inspector">
      <div className="tabs" role="tablist" aria-label="Inspector tabs">
        {tabs.map(([t, text]) => (
          <button key={t} type="button" role="tab" id={`tab-${t}`} aria-selected={tab === t} aria-controls="side-panel-body"
            className={tab === t ? 'is-on' : ''} onClick={() => useStudio.getState().setPanelTab(t)}>
            {text}
            {t === 'problems' && c.errors + c.warnings > 0 && (
              <span className={`count ${c.errors ? 'count--error' : 'count--warning'}`}>{c.errors + c.warnings}</span>
            )}
            {t === 'run' && run?.data?.status === 'running' && <span className="status-dot status-dot--running" role="img" aria-label="running" />}
          </button>
        ))}
      </div>
      <div className="side-panel__body" id="side-panel-body" role="tabpanel" aria-labelledby={`tab-${tab}`}>{body}</div>
    </aside>
  );
}
