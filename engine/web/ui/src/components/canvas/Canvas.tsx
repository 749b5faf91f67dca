/**
 * The canvas: the open diagram in React Flow. What it draws comes from the store through the canvas mapping
 * (mapping.ts), with no copy of its own; what the user does on it goes back to the store as edits.
 */
import { useCallback, useEffect, useMemo, useRef, useState, type DragEvent, type MouseEvent as ReactMouseEvent } from 'react';
import {
  Background, BackgroundVariant, ControlButton, Controls, MiniMap, ReactFlow, useReactFlow, useStore, useStoreApi,
  type Connection, type EdgeChange, type FinalConnectionState, type Node, type NodeChange,
} from '@xyflow/react';
import { kindOfKey } from '../../model/format';
import { addLink } from '../../model/ops';
import { NODE_HEIGHT, NODE_WIDTH } from '../../model/sizes';
import { useStudio, type XY } from '../../store';
import { shownRun } from '../../store/nav';
import { mark } from '../../timing';
import { Icon } from '../Icon';
import { typeColour } from '../TypeIcon';
import { BlockNode, LoopGroupNode } from './BlockNode';
import { fitDiagram } from './fit';
import { LinkEdge } from './LinkEdge';
import { createCanvasMapping } from './mapping';
import { OverviewLinks } from './OverviewLinks';
import type { LinkEdgeType } from './types';
import { useAutoLayout } from './useAutoLayout';
import { NoteNode, noteNodes } from './NoteNode';
import { QuickAdd } from './QuickAdd';
import { SelectionToolbar } from './SelectionToolbar';
import { canvasView } from '../../store/canvasTools';
import { notesOf } from '../../model/notes';
import './habits.css';

const nodeTypes = { block: BlockNode, loopGroup: LoopGroupNode, note: NoteNode };
const edgeTypes = { link: LinkEdge };
export const DRAG_MIME = 'application/diagrama-block';

/** The selection after React Flow's select changes: the ones it deselects out, the ones it selects added. */
function selectionAfter(selection: string[], changes: NodeChange[]): string[] {
  const out = new Set<string>();
  const added: string[] = [];
  for (const c of changes) {
    if (c.type !== 'select') continue;
    if (c.selected) added.push(c.id);
    else out.add(c.id);
  }
  const kept = selection.filter((id) => !out.has(id));
  return [...kept, ...added.filter((id) => !kept.includes(id))];
}

/**
 * The places of a drag, given to the store once a frame. React Flow reports a move for each pointer event and, while
 * it pans the view under a block held near the edge, again for each step of the pan: each report given at once
 * would draw the canvas twice in such a frame. The pointer's events come before the frame's animation callbacks,
 * so the places are drawn in the frame they were reported in.
 */
const dragFrames = {
  pending: {} as Record<string, XY>,
  frame: 0,
  add(places: Record<string, XY>): void {
    Object.assign(this.pending, places);
    if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
  },
  flush(): void {
    const places = this.pending;
    this.drop();
    if (Object.keys(places).length) useStudio.getState().dragTo(places);
  },
  /** the canvas goes (another file): a frame still to come must not carry this drag over */
  drop(): void {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.pending = {};
  },
};

/** React Flow's changes to the nodes, as the store's actions: a drag, blocks put down, a selection. */
function onNodesChange(changes: NodeChange[]): void {
  const s = useStudio.getState();
  const moving: Record<string, XY> = {};
  const put: Record<string, XY> = {};
  let selects = false;
  for (const c of changes) {
    if ('id' in c && c.id.startsWith('group:')) continue;
    if ('id' in c && c.id.startsWith('note:')) {
      noteChange(c);
      continue;
    }
    if (c.type === 'position' && c.position) (c.dragging ? moving : put)[c.id] = c.position;
    else if (c.type === 'select') selects = true;
  }
  if (Object.keys(moving).length) dragFrames.add(moving);
  if (Object.keys(put).length) {
    dragFrames.flush(); // the last places first: the blocks are put down where they were last drawn
    s.moveTo(put);
  }
  if (selects) {
    const ids = selectionAfter(s.selection, changes.filter((c) => !('id' in c) || !/^(group|note):/.test(c.id)));
    s.select(ids, ids.length ? null : s.selectedEdge);
  }
}

/**
 * A note's change: a drag (drawn from the store's draft while it lasts, put down in the document at its end), or a
 * select. A resize reports through the note's resizer (NoteNode), not here.
 */
function noteChange(c: NodeChange): void {
  const s = useStudio.getState();
  const index = Number((c as { id: string }).id.slice('note:'.length));
  const note = notesOf(s.diagram)[index];
  if (!note) return;
  const size = { width: note.width ?? 240, height: note.height ?? 120 };
  if (c.type === 'position' && c.position && c.dragging === true) s.setNoteDraft({ index, box: { ...c.position, ...size } });
  else if (c.type === 'position' && c.position && c.dragging === false) s.putNote(index, { ...c.position, ...size }, false);
  else if (c.type === 'position' && c.dragging === false && s.noteDraft?.index === index) s.putNote(index, s.noteDraft.box, false);
  else if (c.type === 'select') {
    if (c.selected) s.selectNote(index);
    else if (s.selectedNote === index) s.selectNote(null);
  }
}

/** A link dropped on the empty canvas: the quick-add search opens there, for a block linked from that handle. */
function onConnectEnd(e: MouseEvent | TouchEvent, state: FinalConnectionState): void {
  if (state.isValid || !state.fromNode || state.fromHandle?.type !== 'source' || state.toNode) return;
  const target = e.target as Element | null;
  if (!target?.closest('.react-flow__pane')) return;
  const point = 'changedTouches' in e ? e.changedTouches[0] : e;
  const flow = canvasView.toFlow?.({ x: point.clientX, y: point.clientY });
  if (!flow) return;
  useStudio.getState().openQuickAdd({ screen: { x: point.clientX, y: point.clientY }, flow: { x: flow.x, y: flow.y - NODE_HEIGHT / 2 },
    source: state.fromNode.id, handle: state.fromHandle.id ?? undefined });
}

function onEdgesChange(changes: EdgeChange<LinkEdgeType>[]): void {
  for (const c of changes) {
    if (c.type !== 'select') continue;
    const s = useStudio.getState();
    if (c.selected) s.selectEdge(c.id);
    else if (s.selectedEdge === c.id) s.selectEdge(null);
  }
}

function toProperties(): void {
  if (useStudio.getState().panelTab !== 'properties') useStudio.getState().setPanelTab('properties');
}

function onPaneClick(): void {
  useStudio.getState().select([], null);
  useStudio.getState().selectNote(null);
  useStudio.getState().setContextMenu(null);
}

function onNodeContextMenu(e: ReactMouseEvent, n: Node): void {
  if (n.id.startsWith('group:')) return;
  e.preventDefault();
  const s = useStudio.getState();
  if (!s.selection.includes(n.id)) s.select([n.id], null);
  s.setContextMenu({ kind: 'block', id: n.id, x: e.clientX, y: e.clientY });
}

/** A double-click on a Subdiagram opens its child (the breadcrumbs lead back). */
function onNodeDoubleClick(_: ReactMouseEvent, n: Node): void {
  const s = useStudio.getState();
  if (s.compiled?.subdiagrams?.[n.id]?.file) void s.drill(n.id);
}

function onEdgeContextMenu(e: ReactMouseEvent, edge: LinkEdgeType): void {
  e.preventDefault();
  useStudio.getState().select([], edge.id);
  useStudio.getState().setContextMenu({ kind: 'link', id: edge.id, x: e.clientX, y: e.clientY });
}

// React Flow copies every prop that changes into its store, and each change there runs every node's and edge's
// selectors: the props are made once, so that a frame of a drag changes only `nodes`
const MULTI_SELECTION_KEYS = ['Meta', 'Control'];
const SNAP_GRID: [number, number] = [4, 4];
const PRO_OPTIONS = { hideAttribution: true };
const DEFAULT_EDGE_OPTIONS = { type: 'link' };
// zoomed out past reading, the links are drawn by OverviewLinks, not as React Flow's edges
const NO_EDGES: LinkEdgeType[] = [];
const miniMapColour = (n: Node) => (n.type === 'loopGroup' ? 'rgba(124,58,237,0.08)' : typeColour((n.data as { block?: { type: string } }).block?.type ?? ''));
const miniMapStroke = (n: Node) => (n.type === 'loopGroup' ? '#c4b5fd' : 'transparent');

/**
 * The view's zoom as the CSS variable `--zoom` on the canvas, for text that stays readable when zoomed out
 * (styles.css); set on the element, so a zoom re-renders nothing. Below OVERVIEW_ZOOM, where a block's text would be
 * under 7 px on screen, it says so (`onOverview`), and the blocks are drawn as tiles.
 */
function ZoomVariable({ onOverview }: { onOverview: (overview: boolean) => void }) {
  const zoom = useStore((s) => Math.round(s.transform[2] * 50) / 50);
  useEffect(() => {
    // once the zoom settles: a new size for every text of a large diagram is costly, never done frame by frame
    const timer = setTimeout(() => {
      document.querySelector<HTMLElement>('.canvas')?.style.setProperty('--zoom', String(zoom));
      onOverview(zoom < OVERVIEW_ZOOM);
    }, ZOOM_SETTLE_MS);
    return () => clearTimeout(timer);
  }, [zoom, onOverview]);
  return null;
}
const ZOOM_SETTLE_MS = 160;
const OVERVIEW_ZOOM = 0.3;

export function Canvas() {
  const diagram = useStudio((s) => s.diagram);
  const compiled = useStudio((s) => s.compiled);
  const problems = useStudio((s) => s.problems);
  const palette = useStudio((s) => s.palette);
  const links = useStudio((s) => s.links);
  const layout = useStudio((s) => s.layout);
  const selection = useStudio((s) => s.selection);
  const selectedEdge = useStudio((s) => s.selectedEdge);
  const run = useStudio(shownRun);
  const dragging = useStudio((s) => s.dragging);
  const fitRequest = useStudio((s) => s.fitRequest);
  const path = useStudio((s) => s.path);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const apply = useStudio((s) => s.apply);
  const colorMode = useStudio((s) => (s.dark ? 'dark' : 'light'));
  const rf = useReactFlow();
  const storeApi = useStoreApi();
  const needsLayout = useAutoLayout();
  const [overview, setOverview] = useState(false);

  const mapping = useMemo(createCanvasMapping, []);
  const notes = useStudio((s) => s.diagram?.notes);
  const selectedNote = useStudio((s) => s.selectedNote);
  const noteDraft = useStudio((s) => s.noteDraft);
  const pointer = useRef<XY | null>(null);
  // what the store asks of the view: its centre, the pointer, a point of the page in the canvas's coordinates
  useEffect(() => {
    canvasView.toFlow = (p) => rf.screenToFlowPosition(p);
    canvasView.centre = () => {
      const r = document.querySelector('.canvas')?.getBoundingClientRect();
      return rf.screenToFlowPosition({ x: r ? r.left + r.width / 2 : 400, y: r ? r.top + r.height / 2 : 300 });
    };
    canvasView.pointer = () => (pointer.current ? rf.screenToFlowPosition(pointer.current) : null);
    return () => {
      canvasView.toFlow = null;
      canvasView.centre = null;
      canvasView.pointer = null;
    };
  }, [rf]);
  useEffect(() => () => dragFrames.drop(), [path]);
  const picture = mapping({ diagram, compiled, layout, palette, links, problems, selection, selectedEdge, run, dragging, overview });
  const shown = picture.blocks.length > 0 && picture.placed;
  // the notes and frames (studio-only `notes:`) below the blocks; without any, React Flow gets the mapping's own array
  const withNotes = useMemo(() => (notes?.length
    ? [...noteNodes(Array.isArray(notes) ? notes : [], selectedNote, noteDraft, readOnly), ...picture.nodes] : picture.nodes),
  [notes, selectedNote, noteDraft, readOnly, picture.nodes]);
  // the links a fit takes in, read when it runs (a frame after it is asked for)
  const fitEdges = useRef(picture.edges);
  fitEdges.current = picture.edges;

  // the first time every block of the open diagram is placed (a timing mark for benchmarks/studio_open)
  const placedFor = useRef<string | null>(null);
  useEffect(() => {
    if (!path || placedFor.current === path || !shown) return;
    placedFor.current = path;
    mark('studio:nodes-placed');
  }, [shown, path]);

  // fit the view when a diagram opens (after its layout) and on request. A diagram's first fit is instant: animated,
  // it would fly in from the last file's view (or the corner), and a click on the pane midway stops it there, so a
  // block dropped next could land on one still in the corner.
  const fitted = useRef({ request: -1, path: null as string | null });
  useEffect(() => {
    if (fitted.current.request === fitRequest || needsLayout || !shown) return;
    const first = fitted.current.path !== path;
    fitted.current = { request: fitRequest, path };
    requestAnimationFrame(() => fitDiagram(rf, storeApi.getState(), fitEdges.current, first ? 0 : undefined));
  }, [fitRequest, shown, rf, storeApi, needsLayout, path]);

  const onConnect = useCallback((c: Connection) => {
    if (!c.source || !c.target) return;
    apply((d, keys) => addLink(d, keys, c.source, c.target, kindOfKey(c.sourceHandle ?? keys.next, keys)));
  }, [apply]);

  const onDragOver = useCallback((e: DragEvent) => {
    if (!e.dataTransfer.types.includes(DRAG_MIME)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = readOnly ? 'none' : 'copy';
  }, [readOnly]);

  const onDrop = useCallback((e: DragEvent) => {
    const type = e.dataTransfer.getData(DRAG_MIME);
    if (!type) return;
    e.preventDefault();
    const p = rf.screenToFlowPosition({ x: e.clientX, y: e.clientY });
    useStudio.getState().addBlockNear(type, { x: p.x - NODE_WIDTH / 2, y: p.y - NODE_HEIGHT / 2 });
  }, [rf]);

  return (
    <div className={`canvas${overview ? ' is-overview' : ''}`} onDragOver={onDragOver} onDrop={onDrop} data-testid="canvas"
      onMouseMove={(e) => { pointer.current = { x: e.clientX, y: e.clientY }; }} onMouseLeave={() => { pointer.current = null; }}>
      <ReactFlow
        nodes={withNotes}
        edges={overview ? NO_EDGES : picture.edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={onConnect}
        onConnectEnd={onConnectEnd}
        onNodeClick={toProperties}
        onEdgeClick={toProperties}
        onPaneClick={onPaneClick}
        onNodeContextMenu={onNodeContextMenu}
        onNodeDoubleClick={onNodeDoubleClick}
        onEdgeContextMenu={onEdgeContextMenu}
        colorMode={colorMode}
        nodesDraggable={!readOnly}
        nodesConnectable={!readOnly}
        elementsSelectable
        deleteKeyCode={null}
        selectionKeyCode="Shift"
        multiSelectionKeyCode={MULTI_SELECTION_KEYS}
        selectionOnDrag={false}
        connectionRadius={28}
        minZoom={0.05}
        maxZoom={2}
        snapToGrid
        snapGrid={SNAP_GRID}
        proOptions={PRO_OPTIONS}
        defaultEdgeOptions={DEFAULT_EDGE_OPTIONS}
        aria-label="Diagram canvas"
      >
        {/* zoomed out, the dots would be a haze under a pixel apart, repainted on every frame of a pan */}
        {!overview && <Background variant={BackgroundVariant.Dots} gap={20} size={1.2} color="var(--dots, #cbd5e1)" />}
        {/* zoomed out past reading, the view is its own overview: a minimap would draw it again, a second time each
            frame of a drag */}
        {!overview && <MiniMap pannable zoomable ariaLabel="Overview" nodeColor={miniMapColour} nodeStrokeColor={miniMapStroke} />}
        <Controls showInteractive={false} showFitView={false}>
          <ControlButton className="react-flow__controls-fitview" onClick={() => useStudio.getState().requestFit()} title="Fit to view (F)" aria-label="Fit the diagram to the view">
            <Icon name="fit" size={12} />
          </ControlButton>
        </Controls>
        <ZoomVariable onOverview={setOverview} />
        {overview && <OverviewLinks blocks={picture.blocks} edges={picture.edges} />}
      </ReactFlow>
      <SelectionToolbar />
      {diagram && !readOnly && (
        <button type="button" className="btn btn--small canvas__add-note" onClick={() => useStudio.getState().addNoteHere()}
          title="Add a sticky note (N)">+ Note</button>
      )}
      <QuickAdd />
      {diagram && diagram.blocks.length === 0 && (
        <div className="canvas__empty">Drag a block from the palette to start.</div>
      )}
      {path && !diagram && (
        <div className="canvas__empty canvas__empty--broken">This file cannot be drawn: its problems say why. Repair it in the YAML beside; the canvas draws it as soon as it reads.</div>
      )}
    </div>
  );
}
