/**
 * Runs ELK when a diagram opens (or Auto-layout is asked for) and when a block without a written position has no
 * place yet; otherwise automatic places stay put, so nothing jumps while editing. The result goes to the store's
 * UI slice, which the canvas mapping reads.
 */
import { useEffect, useMemo } from 'react';
import { loopBodies } from '../../model/graph';
import { avoidWritten, layoutDiagram } from '../../model/layout';
import { NODE_HEIGHT, NODE_WIDTH } from '../../model/sizes';
import { useStudio } from '../../store';

/** True while the open diagram waits for its layout. */
export function useAutoLayout(): boolean {
  const diagram = useStudio((s) => s.diagram);
  const layout = useStudio((s) => s.layout);
  const links = useStudio((s) => s.links);
  const path = useStudio((s) => s.path);
  const layoutFor = useStudio((s) => s.layoutFor);
  const layoutGeneration = useStudio((s) => s.layoutGeneration);
  const layoutTag = `${path}#${layoutGeneration}`;

  const needsLayout = useMemo(() => {
    if (!diagram) return false;
    const unplaced = diagram.blocks.filter((b) => !Array.isArray(b.position));
    if (!unplaced.length) return false;
    if (!layout || layoutFor !== layoutTag) return true;
    return unplaced.some((b) => !layout.nodes[b.id]);
  }, [diagram, layout, layoutFor, layoutTag]);

  useEffect(() => {
    // the links are known once the format and the palette are: the layout waits for them (index.html asked early)
    if (!needsLayout || !links) return;
    const { diagram: d, compiled } = useStudio.getState();
    if (!d) return;
    let live = true;
    layoutDiagram(d, loopBodies(d, compiled, links), links).then(
      (result) => {
        if (!live) return;
        const written: Record<string, { x: number; y: number }> = {};
        for (const b of d.blocks) if (Array.isArray(b.position)) written[b.id] = { x: Number(b.position[0]) || 0, y: Number(b.position[1]) || 0 };
        useStudio.getState().setLayout(avoidWritten(result, written, { width: NODE_WIDTH, height: NODE_HEIGHT }), layoutTag);
      },
      (e: Error) => useStudio.getState().toast(`layout: ${e.message}`, 'error'),
    );
    return () => { live = false; };
  }, [needsLayout, layoutTag, links]);

  return needsLayout;
}
