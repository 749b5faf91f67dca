import { useCallback, useEffect } from 'react';
import { ReactFlowProvider, useReactFlow } from '@xyflow/react';
import { isDirty, useStudio } from './store';
import { useShortcuts } from './shortcuts';
import { Toolbar } from './components/Toolbar';
import { FilesSidebar } from './components/FilesSidebar';
import { Palette } from './components/Palette';
import { Canvas } from './components/canvas/Canvas';
import { SidePanel } from './components/panels/SidePanel';
import { ConflictBanner, DialogHost, HelpPanel, Toasts } from './components/Overlays';

function Studio() {
  const loadError = useStudio((s) => s.loadError);
  const rf = useReactFlow();
  const fit = useCallback(() => void rf.fitView({ padding: 0.15, duration: 200 }), [rf]);
  useShortcuts(fit);

  useEffect(() => {
    const beforeUnload = (e: BeforeUnloadEvent) => {
      if (isDirty(useStudio.getState())) {
        e.preventDefault();
        e.returnValue = '';
      }
    };
    window.addEventListener('beforeunload', beforeUnload);
    return () => window.removeEventListener('beforeunload', beforeUnload);
  }, []);

  return (
    <div className="app">
      <Toolbar />
      <div className="workspace">
        <nav className="sidebar" aria-label="Files and blocks">
          <FilesSidebar />
          <Palette />
        </nav>
        <main className="stage">
          {loadError && <div className="note note--error" role="alert">Cannot reach the studio server: {loadError}</div>}
          <ConflictBanner />
          <Canvas />
        </main>
        <SidePanel />
      </div>
      <DialogHost />
      <HelpPanel />
      <Toasts />
    </div>
  );
}

export function App() {
  return (
    <ReactFlowProvider>
      <Studio />
    </ReactFlowProvider>
  );
}
