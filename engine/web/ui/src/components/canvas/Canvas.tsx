/** The canvas: blocks and links of the open diagram in React Flow, laid out by ELK where no position is written. */
import { useCallback, useEffect, useMemo, useRef, useState, type DragEvent } from 'react';
import {
  Background, BackgroundVariant, Controls, MarkerType, MiniMap, ReactFlow, applyNodeChanges, useReactFlow,
  type Connection, type EdgeChange, type NodeChange, type Node,
} from '@xyflow/react';
import { diagramEdges, loopBodies } from '../../model/graph';
import { avoidWritten, layoutDiagram } from '../../model/layout';
import { addBlock, addLink, moveBlocks, type Position } from '../../model/ops';
import { counts } from '../../model/problems';
import { failedBlocks } from '../../model/run';
import { edgeLabelText, GROUP_PADDING, NODE_HEIGHT, NODE_WIDTH } from '../../model/sizes';
import { mark, useStudio } from '../../store';
import { typeColour } from '../TypeIcon';
import { BlockNode, LoopGroupNode } from './BlockNode';
import { LinkEdge } from './LinkEdge';
import type { BlockNodeType, GroupNodeType, LinkEdgeType, RunMark } from './types';

const nodeTypes = { block: BlockNode, loopGroup: LoopGroupNode };
const edgeTypes = { link: LinkEdge };
export const DRAG_MIME = 'application/diagrama-block';

const EDGE_COLOURS = { next: '#64748b', error: '#dc2626', body: '#7c3aed' };

/** True when `b` looks the same as `a` (same place, state and data, field by field). */
function sameNode(a: BlockNodeType, b: BlockNodeType): boolean {
  if (a.position.x !== b.position.x || a.position.y !== b.position.y || a.hidden !== b.hidden || a.selected !== b.selected
    || a.dragging !== b.dragging || a.ariaLabel !== b.ariaLabel) return false;
  const x = a.data as Record<string, unknown>;
  const y = b.data as Record<string, unknown>;
  const keys = Object.keys(y);
  return keys.length === Object.keys(x).length && keys.every((k) => x[k] === y[k]);
}

export function Canvas() {
  const diagram = useStudio((s) => s.diagram);
  const compiled = useStudio((s) => s.compiled);
  const problems = useStudio((s) => s.problems);
  const palette = useStudio((s) => s.palette);
  const layout = useStudio((s) => s.layout);
  const selection = useStudio((s) => s.selection);
  const selectedEdge = useStudio((s) => s.selectedEdge);
  const run = useStudio((s) => s.run);
  const fitRequest = useStudio((s) => s.fitRequest);
  const readOnly = useStudio((s) => !!s.session?.read_only);
  const apply = useStudio((s) => s.apply);
  const rf = useReactFlow();
  const [nodes, setNodes] = useState<BlockNodeType[]>([]);
  const path = useStudio((s) => s.path);
  const layoutFor = useStudio((s) => s.layoutFor);
  const layoutGeneration = useStudio((s) => s.layoutGeneration);

  const bodyTypes = useMemo(() => new Set(palette.filter((t) => t.ports.includes('body')).map((t) => t.type)), [palette]);
  const bodies = useMemo(() => (diagram ? loopBodies(diagram, compiled) : []), [diagram, compiled]);
  const layoutTag = `${path}#${layoutGeneration}`;
  // ELK runs when a diagram opens (or Auto-layout is asked) and when a block without position has no place yet;
  // otherwise automatic places stay put, so nothing jumps while editing
  const needsLayout = useMemo(() => {
    if (!diagram) return false;
    const unplaced = diagram.blocks.filter((b) => !Array.isArray(b.position));
    if (!unplaced.length) return false;
    if (!layout || layoutFor !== layoutTag) return true;
    return unplaced.some((b) => !layout.nodes[b.id]);
  }, [diagram, layout, layoutFor, layoutTag]);
  // the blocks that get a body port only because of their type: the layout does not wait for the palette, and
  // runs again when it arrives only if it changes these ports (a Loop without a body link yet)
  const typeBodyPorts = useMemo(
    () => (diagram ? diagram.blocks.filter((b) => typeof b.body !== 'string' && bodyTypes.has(b.type)).map((b) => b.id).join('\n') : ''),
    [diagram, bodyTypes],
  );

  useEffect(() => {
    if (!needsLayout) return;
    const { diagram: d, compiled: c } = useStudio.getState();
    if (!d) return;
    let live = true;
    const ports = new Set(typeBodyPorts ? typeBodyPorts.split('\n') : []);
    const types = new Set(d.blocks.filter((b) => ports.has(b.id)).map((b) => b.type));
    layoutDiagram(d, loopBodies(d, c), types).then(
      (result) => {
        if (!live) return;
        const written: Record<string, { x: number; y: number }> = {};
        for (const b of d.blocks) if (Array.isArray(b.position)) written[b.id] = { x: Number(b.position[0]) || 0, y: Number(b.position[1]) || 0 };
        useStudio.getState().setLayout(avoidWritten(result, written, { width: NODE_WIDTH, height: NODE_HEIGHT }), layoutTag);
      },
      (e: Error) => useStudio.getState().toast(`layout: ${e.message}`, 'error'),
    );
    return () => { live = false; };
  }, [needsLayout, layoutTag, typeBodyPorts]);

  const runMarks = useMemo(() => {
    const marks = new Map<string, { mark: RunMark; steps: number }>();
    const data = run?.data;
    if (!data) return marks;
    for (const s of data.steps) {
      const m = marks.get(s.block) ?? { mark: 'ok' as RunMark, steps: 0 };
      m.steps++;
      marks.set(s.block, m);
    }
    for (const id of data.blocks) if (!marks.has(id)) marks.set(id, { mark: 'ok', steps: 1 });
    for (const id of failedBlocks(data)) marks.set(id, { mark: 'failed', steps: marks.get(id)?.steps ?? 1 });
    if (data.status === 'running' && data.steps.length) {
      const last = data.steps[data.steps.length - 1];
      if (last.status === 'running') marks.set(last.block, { mark: 'running', steps: marks.get(last.block)?.steps ?? 1 });
    }
    return marks;
  }, [run]);

  // blocks → nodes (keeping the positions of nodes being dragged); a node whose look did not change stays the
  // same object, so React Flow and the memoised BlockNode skip it
  useEffect(() => {
    if (!diagram) { setNodes([]); return; }
    const byBlock = new Map<string, typeof problems>();
    for (const p of problems) if (p.block) byBlock.set(p.block, [...(byBlock.get(p.block) ?? []), p]);
    const types = new Map(palette.map((t) => [t.type, t]));
    setNodes((previous) => {
      const prev = new Map(previous.map((n) => [n.id, n]));
      const next = diagram.blocks.map((b, i): BlockNodeType => {
        const written = Array.isArray(b.position) ? { x: Number(b.position[0]) || 0, y: Number(b.position[1]) || 0 } : undefined;
        const auto = layout?.nodes[b.id];
        const position = written ?? auto ?? { x: (i % 4) * 280, y: Math.floor(i / 4) * 140 };
        const mine = byBlock.get(b.id) ?? [];
        const c = counts(mine);
        const r = runMarks.get(b.id);
        const old = prev.get(b.id);
        const typeInfo = types.get(b.type);
        const node: BlockNodeType = {
          id: b.id,
          type: 'block',
          position: old?.dragging ? old.position : position,
          dragging: old?.dragging,
          hidden: !written && !auto,
          selected: selection.includes(b.id),
          width: NODE_WIDTH,
          height: NODE_HEIGHT,
          ariaLabel: `${b.type} block ${b.id}${b.label ? ` (${b.label})` : ''}${c.errors ? `, ${c.errors} errors` : ''}`,
          data: {
            block: b,
            typeInfo,
            unknownType: !typeInfo && palette.length > 0,
            errors: c.errors,
            warnings: c.warnings,
            firstProblem: mine[0] ? `${mine[0].message}${mine[0].hint ? ` — ${mine[0].hint}` : ''}` : undefined,
            run: run?.data ? (r?.mark ?? 'skipped') : null,
            steps: r?.steps ?? 0,
            passes: run?.data?.passes?.[b.id],
            hasBody: typeof b.body === 'string' || bodyTypes.has(b.type),
          },
        };
        return old && sameNode(old, node) ? old : node;
      });
      return next.length === previous.length && next.every((n, i) => n === previous[i]) ? previous : next;
    });
  }, [diagram, layout, selection, problems, runMarks, palette, bodyTypes, run]);

  // the first time every block of the open diagram is placed (a timing mark for benchmarks/studio_open)
  const placedFor = useRef<string | null>(null);
  useEffect(() => {
    if (!path || placedFor.current === path || !nodes.length || nodes.some((n) => n.hidden)) return;
    placedFor.current = path;
    mark('studio:nodes-placed');
  }, [nodes, path]);

  const groups = useMemo((): GroupNodeType[] => {
    const byId = new Map(nodes.map((n) => [n.id, n]));
    return bodies.flatMap(({ loop, members }) => {
      const ms = members.map((m) => byId.get(m)).filter((n): n is BlockNodeType => !!n && !n.hidden);
      if (!ms.length) return [];
      const x0 = Math.min(...ms.map((n) => n.position.x)) - GROUP_PADDING.left;
      const y0 = Math.min(...ms.map((n) => n.position.y)) - GROUP_PADDING.top;
      const x1 = Math.max(...ms.map((n) => n.position.x + NODE_WIDTH)) + GROUP_PADDING.right;
      const y1 = Math.max(...ms.map((n) => n.position.y + NODE_HEIGHT)) + GROUP_PADDING.bottom;
      const passes = run?.data?.passes?.[loop];
      return [{
        id: `group:${loop}`,
        type: 'loopGroup',
        position: { x: x0, y: y0 },
        width: x1 - x0,
        height: y1 - y0,
        style: { width: x1 - x0, height: y1 - y0 },
        data: { loop, title: `${loop} body${passes !== undefined ? ` · ${passes} pass${passes === 1 ? '' : 'es'}` : ''}`, run: null },
        selectable: false,
        draggable: false,
        focusable: false,
        connectable: false,
        zIndex: -1,
      }];
    });
  }, [nodes, bodies, run]);

  const edges = useMemo((): LinkEdgeType[] => {
    if (!diagram) return [];
    const taken = new Set((run?.data?.links ?? []).map(([s, t]) => `${s}→${t}`));
    const placed = new Set(diagram.blocks.filter((b) => !Array.isArray(b.position)).map((b) => b.id));
    return diagramEdges(diagram).map((e) => {
      const isTaken = taken.has(`${e.source}→${e.target}`);
      const colour = isTaken ? '#16a34a' : e.id === selectedEdge ? '#2563eb' : EDGE_COLOURS[e.kind];
      return {
        id: e.id,
        type: 'link',
        source: e.source,
        target: e.target,
        sourceHandle: e.kind === 'error' ? 'on_error' : e.kind === 'body' ? 'body' : 'next',
        targetHandle: 'in',
        selected: e.id === selectedEdge,
        animated: isTaken && run?.data?.status === 'running',
        zIndex: e.id === selectedEdge ? 10 : 0,
        markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16, color: colour },
        ariaLabel: `${e.kind} link from ${e.source} to ${e.target}${e.when ? ` when ${e.when}` : ''}`,
        data: {
          kind: e.kind,
          label: e.kind === 'next' ? edgeLabelText(e.when, e.index, e.count) : '',
          when: e.when,
          index: e.index,
          count: e.count,
          route: placed.has(e.source) && placed.has(e.target) ? layout?.edges[e.id] : undefined,
          taken: isTaken,
          dimmed: !!run?.data && !isTaken,
        },
      };
    });
  }, [diagram, selectedEdge, run, layout]);

  // fit the view when a diagram opens (after its layout) and on request
  const fitted = useRef(-1);
  useEffect(() => {
    if (fitted.current === fitRequest || needsLayout || !nodes.length || nodes.some((n) => n.hidden)) return;
    fitted.current = fitRequest;
    requestAnimationFrame(() => void rf.fitView({ padding: 0.15, maxZoom: 1.1, duration: 200 }));
  }, [fitRequest, nodes, rf, needsLayout]);

  const onNodesChange = useCallback((changes: NodeChange<BlockNodeType>[]) => {
    const mine = changes.filter((c) => !('id' in c) || !String(c.id).startsWith('group:'));
    setNodes((ns) => {
      const next = applyNodeChanges(mine, ns);
      if (mine.some((c) => c.type === 'select')) {
        const ids = next.filter((n) => n.selected).map((n) => n.id);
        queueMicrotask(() => {
          const s = useStudio.getState();
          s.select(ids, ids.length ? null : s.selectedEdge);
        });
      }
      return next;
    });
  }, []);

  const onEdgesChange = useCallback((changes: EdgeChange<LinkEdgeType>[]) => {
    for (const c of changes) {
      if (c.type !== 'select') continue;
      const s = useStudio.getState();
      if (c.selected) useStudio.setState({ selectedEdge: c.id });
      else if (s.selectedEdge === c.id) useStudio.setState({ selectedEdge: null });
    }
  }, []);

  const onConnect = useCallback((c: Connection) => {
    if (!c.source || !c.target) return;
    const kind = c.sourceHandle === 'on_error' ? 'error' : c.sourceHandle === 'body' ? 'body' : 'next';
    apply((d) => addLink(d, c.source, c.target, kind));
  }, [apply]);

  const onNodeDragStop = useCallback((_: unknown, __: Node, dragged: Node[]) => {
    const positions: Record<string, Position> = {};
    for (const n of dragged) if (!n.id.startsWith('group:')) positions[n.id] = [n.position.x, n.position.y];
    if (Object.keys(positions).length) apply((d) => moveBlocks(d, positions));
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
    let id = '';
    const ok = apply((d) => {
      const r = addBlock(d, type, [p.x - NODE_WIDTH / 2, p.y - NODE_HEIGHT / 2]);
      id = r.id;
      return r.diagram;
    });
    if (ok) useStudio.setState({ selection: [id], selectedEdge: null, panelTab: 'properties' });
  }, [apply, rf]);

  const allNodes = useMemo(() => [...groups, ...nodes] as Node[], [groups, nodes]);

  return (
    <div className="canvas" onDragOver={onDragOver} onDrop={onDrop} data-testid="canvas">
      <ReactFlow
        nodes={allNodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={onNodesChange as (c: NodeChange[]) => void}
        onEdgesChange={onEdgesChange}
        onConnect={onConnect}
        onNodeDragStop={onNodeDragStop}
        onNodeClick={() => { if (useStudio.getState().panelTab !== 'properties') useStudio.setState({ panelTab: 'properties' }); }}
        onEdgeClick={() => { if (useStudio.getState().panelTab !== 'properties') useStudio.setState({ panelTab: 'properties' }); }}
        onPaneClick={() => useStudio.getState().select([], null)}
        nodesDraggable={!readOnly}
        nodesConnectable={!readOnly}
        elementsSelectable
        deleteKeyCode={null}
        selectionKeyCode="Shift"
        multiSelectionKeyCode={['Meta', 'Control']}
        selectionOnDrag={false}
        connectionRadius={28}
        minZoom={0.05}
        maxZoom={2}
        snapToGrid
        snapGrid={[4, 4]}
        proOptions={{ hideAttribution: true }}
        defaultEdgeOptions={{ type: 'link' }}
        aria-label="Diagram canvas"
      >
        <Background variant={BackgroundVariant.Dots} gap={20} size={1.2} color="#cbd5e1" />
        <MiniMap pannable zoomable ariaLabel="Overview"
          nodeColor={(n) => (n.type === 'loopGroup' ? 'rgba(124,58,237,0.08)' : typeColour((n.data as { block?: { type: string } }).block?.type ?? ''))}
          nodeStrokeColor={(n) => (n.type === 'loopGroup' ? '#c4b5fd' : 'transparent')} />
        <Controls showInteractive={false} />
      </ReactFlow>
      {diagram && diagram.blocks.length === 0 && (
        <div className="canvas__empty">Drag a block from the palette to start.</div>
      )}
    </div>
  );
}
