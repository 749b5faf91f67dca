import { useEffect } from 'react';
import { ReactFlowProvider } from '@xyflow/react';
import { decodeHash, isDirty, paneShown, useStudio } from './store';
import { useShortcuts } from './shortcuts';
import { Toolbar } from './components/Toolbar';
import { FilesSidebar } from './components/FilesSidebar';
import { Palette } from './components/Palette';
import { Canvas } from './components/canvas/Canvas';
import { SidePanel } from './components/panels/SidePanel';
import { ConflictBanner, DialogHost, DraftBanner, HelpPanel, MergeView, Toasts } from './components/Overlays';
import { SourcePanel } from './components/source/SourcePanel';
import { ContextMenu } from './components/canvas/ContextMenu';
import { VersionHistory } from './components/VersionHistory';
import { usePinsOfOpenFile } from './components/pins/Pins';
import { BlockSearch, Breadcrumbs, GalleryDialog } from './components/Navigation';

/** The page's theme: the system's (prefers-color-scheme, followed live), or the one chosen in the toolbar. */
function useTheme() {
  const theme = useStudio((s) => s.theme);
  useEffect(() => {
    const media = window.matchMedia?.('(prefers-color-scheme: dark)');
    const apply = () => {
      const dark = theme === 'dark' || (theme === 'system' && !!media?.matches);
      document.documentElement.dataset.theme = dark ? 'dark' : 'light';
      if (useStudio.getState().dark !== dark) useStudio.setState({ dark });
    };
    apply();
    media?.addEventListener?.('change', apply);
    return () => media?.removeEventListener?.('change', apply);
  }, [theme]);
}

const fitToView = () => useStudio.getState().requestFit();

function Studio() {
  const loadError = useStudio((s) => s.loadError);
  const pane = useStudio(paneShown);
  // a file that cannot be drawn opens in its YAML, to be repaired here
  const broken = useStudio((s) => !!s.path && !s.diagram);
  useShortcuts(fitToView);
  useTheme();
  usePinsOfOpenFile();

  useEffect(() => {
    const beforeUnload = (e: BeforeUnloadEvent) => {
      if (isDirty(useStudio.getState())) {
        e.preventDefault();
        e.returnValue = '';
      }
    };
    window.addEventListener('beforeunload', beforeUnload);
    // the address's #file, typed or reached by Back and Forward, opens that file (unsaved edits stay as a draft)
    const follow = () => {
      const wanted = decodeHash(window.location.hash);
      const s = useStudio.getState();
      if (wanted && wanted !== s.path) void s.open(wanted, { replace: true });
    };
    window.addEventListener('hashchange', follow);
    window.addEventListener('popstate', follow);
    return () => {
      window.removeEventListener('beforeunload', beforeUnload);
      window.removeEventListener('hashchange', follow);
      window.removeEventListener('popstate', follow);
    };
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
          <DraftBanner />
          <Breadcrumbs />
          <div className={`stage__split${broken ? ' is-broken' : ''}`}>
            <Canvas />
            <BlockSearch />
            {pane && <SourcePanel closable={!broken} />}
          </div>
        </main>
        <SidePanel />
      </div>
      <DialogHost />
      <HelpPanel />
      <VersionHistory />
      <MergeView />
      <ContextMenu />
      <GalleryDialog />
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
