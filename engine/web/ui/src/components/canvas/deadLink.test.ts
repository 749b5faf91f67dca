/** Issue 43, fix 2: a `next` link the server says never runs (`dead_link`, at field `next[1]`) is marked on the canvas. */
import { describe, expect, it } from 'vitest';
import type { Diagram, Problem } from '../../api/types';
import { keys, orderAgent, palette } from '../../test/fixtures';
import { createCanvasMapping, linkProblems, type CanvasInput } from './mapping';
import { linkClasses } from './LinkEdge';

const dead: Problem = {
  file: null, line: 9, column: 9, block: 'ask', field: 'next[1]', code: 'dead_link', severity: 'warning',
  message: "this link to 'done' never runs: the link to 'dispatch' before it has no 'when', so it is always taken",
  hint: "give it a 'when' (and move it above the link to 'dispatch'), or remove it",
};

function input(diagram: Diagram, problems: Problem[]): CanvasInput {
  const nodes = Object.fromEntries(diagram.blocks.map((b, i) => [b.id, { x: i * 300, y: 10 }]));
  return { diagram, compiled: null, layout: { nodes, edges: {} }, palette, links: keys, problems, selection: [],
    selectedEdge: null, run: null, dragging: null, overview: false };
}

describe('a dead link on the canvas', () => {
  it('reads a problem at a next link by its field, message and hint together', () => {
    expect(linkProblems([dead])).toEqual(new Map([['next:ask:1', `${dead.message} — ${dead.hint}`]]));
    expect(linkProblems([{ ...dead, field: 'with.model' }]).size).toBe(0);
  });
  it('marks that link only, and its look changes (dotted in the warning colour)', () => {
    const d = orderAgent();
    d.blocks[1] = { ...d.blocks[1], next: [{ to: 'dispatch' }, { to: 'done' }] };
    const { edges } = createCanvasMapping()(input(d, [dead]));
    const marked = edges.filter((e) => e.data!.problem);
    expect(marked.map((e) => e.id)).toEqual(['next:ask:1']);
    expect(linkClasses(marked[0].data!, false)).toContain('has-problem');
    expect(marked[0].ariaLabel).toContain('never runs');
    const clean = createCanvasMapping()(input(d, []));
    expect(clean.edges.some((e) => e.data!.problem)).toBe(false);
  });
});
