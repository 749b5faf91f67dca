import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import '@xyflow/react/dist/style.css';
import './styles.css';
import { App } from './App';
import { preloadLayout } from './model/layout';
import { useStudio } from './store';

// before the first render: ELK (1.5 MB, in a worker) starts loading, and the store takes over the requests
// index.html started, so the diagram's layout can begin while React draws the page
preloadLayout();
void useStudio.getState().init();
// the store, read-only by intent, for the browser tests and benchmarks to read what the page holds (the YAML
// pane's text: CodeMirror draws only the lines in view)
(window as unknown as { __diagramaStudio: typeof useStudio }).__diagramaStudio = useStudio;

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
