/**
 * The YAML beside the canvas (CodeMirror 6): the file's text, kept in step with the canvas both ways through the
 * store's source slice; completion and hover documentation from the format's JSON Schema (model/schemaDocs, our
 * own small completion source over it); problems underlined at their line and column; the selected block's lines
 * selected, and the block the cursor is in selected on the canvas.
 */
import { useEffect, useRef } from 'react';
import { autocompletion, type CompletionContext, type CompletionResult } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { yaml } from '@codemirror/lang-yaml';
import { bracketMatching, HighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { lintGutter, setDiagnostics, type Diagnostic } from '@codemirror/lint';
import { highlightSelectionMatches, search, searchKeymap } from '@codemirror/search';
import { Annotation, EditorSelection, EditorState, type Text } from '@codemirror/state';
import {
  drawSelection, EditorView, highlightActiveLine, highlightActiveLineGutter, hoverTooltip, keymap, lineNumbers,
} from '@codemirror/view';
import { tags } from '@lezer/highlight';
import type { Problem } from '../../api/types';
import { completions, documentation, type Schema } from '../../model/schemaDocs';
import { contextAt } from '../../model/yamlPath';
import { useStudio } from '../../store';
import { loadSchema, schemaNow } from './schema';

/** Marks a change the store made (the canvas's text, a reload): not the user typing. */
const fromStore = Annotation.define<boolean>();

const highlight = HighlightStyle.define([
  { tag: tags.definition(tags.propertyName), class: 'cm-yaml-key' },
  { tag: tags.propertyName, class: 'cm-yaml-key' },
  { tag: [tags.string, tags.special(tags.string)], class: 'cm-yaml-string' },
  { tag: [tags.number, tags.bool, tags.null], class: 'cm-yaml-atom' },
  { tag: tags.comment, class: 'cm-yaml-comment' },
  { tag: [tags.meta, tags.punctuation, tags.separator], class: 'cm-yaml-punct' },
]);

function schemaCompletion(context: CompletionContext): CompletionResult | null {
  const schema = schemaNow();
  if (!schema) return null;
  const text = context.state.doc.toString();
  const where = contextAt(text, context.pos);
  if (!where.prefix && !context.explicit && where.at === 'key') return null;
  const options = completions(schema, where);
  if (!options.length) return null;
  return {
    from: where.from,
    options: options.map((o) => ({ label: o.label, detail: o.detail, info: o.info, apply: o.apply, type: where.at === 'key' ? 'property' : 'enum' })),
    validFor: /^[\w.$-]*$/,
  };
}

const schemaHover = hoverTooltip((view, pos) => {
  const schema = schemaNow();
  if (!schema) return null;
  const line = view.state.doc.lineAt(pos);
  const text = line.text;
  let start = pos - line.from;
  let end = start;
  while (start > 0 && /[\w.$-]/.test(text[start - 1])) start--;
  while (end < text.length && /[\w.$-]/.test(text[end])) end++;
  if (start === end) return null;
  const word = text.slice(start, end);
  const where = contextAt(view.state.doc.toString(), line.from + end);
  const doc = documentation(schema as Schema, where, word);
  if (!doc) return null;
  return {
    pos: line.from + start,
    end: line.from + end,
    above: true,
    create: () => {
      const dom = document.createElement('div');
      dom.className = 'cm-schema-doc';
      const title = document.createElement('strong');
      title.textContent = doc.title;
      dom.append(title);
      if (doc.text) {
        const body = document.createElement('div');
        body.textContent = doc.text;
        dom.append(body);
      }
      return { dom };
    },
  };
});

/** The problems of the text itself (not of another file, and with a line) as underlines. */
export function diagnostics(doc: Text, problems: Problem[]): Diagnostic[] {
  const found: Diagnostic[] = [];
  for (const p of problems) {
    if (p.file !== null || p.line === null || p.line < 1 || p.line > doc.lines) continue;
    const line = doc.line(p.line);
    const column = Math.max(0, Math.min((p.column ?? 1) - 1, line.length));
    let from = line.from + column;
    let to = line.to;
    if (column === 0) from = line.from + (line.text.length - line.text.trimStart().length);
    if (to <= from) to = Math.min(from + 1, doc.length);
    found.push({ from, to: Math.max(to, from), severity: p.severity, message: `${p.message}${p.hint ? ` — ${p.hint}` : ''}`,
      source: p.block ? `${p.block}${p.field ? ` · ${p.field}` : ''}` : undefined });
  }
  return found;
}

/** The change from `from` to `to` as one replacement of what differs between them (so the cursor stays put). */
export function minimalChange(from: string, to: string): { from: number; to: number; insert: string } | null {
  if (from === to) return null;
  let start = 0;
  const max = Math.min(from.length, to.length);
  while (start < max && from[start] === to[start]) start++;
  let end = 0;
  while (end < max - start && from[from.length - 1 - end] === to[to.length - 1 - end]) end++;
  return { from: start, to: from.length - end, insert: to.slice(start, to.length - end) };
}

export function SourcePane() {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const readOnly = useStudio((s) => !!s.session?.read_only);

  useEffect(() => {
    void loadSchema();
    const state = EditorState.create({
      doc: useStudio.getState().sourceText ?? '',
      extensions: [
        lineNumbers(),
        highlightActiveLineGutter(),
        highlightActiveLine(),
        drawSelection(),
        history(),
        indentOnInput(),
        bracketMatching(),
        yaml(),
        syntaxHighlighting(highlight),
        lintGutter(),
        autocompletion({ override: [schemaCompletion], activateOnTyping: true }),
        schemaHover,
        search({ top: true }),
        highlightSelectionMatches(),
        keymap.of([...searchKeymap, ...defaultKeymap, ...historyKeymap, indentWithTab]),
        EditorState.tabSize.of(2),
        EditorView.editable.of(!readOnly),
        EditorView.contentAttributes.of({ 'aria-label': 'YAML source', 'data-testid': 'yaml-editor', tabindex: '0' }),
        EditorView.updateListener.of((u) => {
          const external = u.transactions.some((t) => t.annotation(fromStore));
          if (u.docChanged && !external) useStudio.getState().typeSource(u.state.doc.toString());
          if (u.selectionSet && !external && u.view.hasFocus) {
            const line = u.state.doc.lineAt(u.state.selection.main.head).number;
            const lines = useStudio.getState().blockLines;
            const id = Object.keys(lines).find((b) => line >= lines[b].first && line <= lines[b].last) ?? null;
            useStudio.getState().cursorInBlock(id);
          }
        }),
      ],
    });
    const v = new EditorView({ state, parent: host.current! });
    view.current = v;

    const sync = (s: ReturnType<typeof useStudio.getState>, before?: ReturnType<typeof useStudio.getState>) => {
      const text = s.sourceText ?? '';
      // the editor's whole text, read only when it is compared: this runs at every change of the store, each frame
      // of a drag on the canvas too, and reading a large diagram's text then cost a frame of it each time
      let read: string | null = null;
      const editorText = () => (read ??= v.state.doc.toString());
      if ((!before || s.sourceText !== before.sourceText) && text !== editorText()) {
        const current = editorText();
        const change = minimalChange(current, text);
        if (change) v.dispatch({ changes: change, annotations: fromStore.of(true) });
      }
      if (!before || s.problems !== before.problems || s.sourceText !== before.sourceText) {
        v.dispatch(setDiagnostics(v.state, diagnostics(v.state.doc, s.problems)));
      }
      if (s.revealLine !== null && s.revealLine <= v.state.doc.lines && (!before || s.revealLine !== before.revealLine || text !== editorText())) {
        const line = v.state.doc.line(s.revealLine);
        v.dispatch({ selection: { anchor: line.from, head: line.to }, effects: EditorView.scrollIntoView(line.from, { y: 'center' }),
          annotations: fromStore.of(true) });
        v.focus();
        useStudio.setState({ revealLine: null });
        return;
      }
      if (before && (s.selection !== before.selection || s.blockLines !== before.blockLines) && s.selection.length === 1) {
        if (s.selectionFromPane) {
          useStudio.setState({ selectionFromPane: false });
          return;
        }
        if (s.selection === before.selection && v.hasFocus) return;
        const lines = s.blockLines[s.selection[0]];
        if (!lines || lines.last > v.state.doc.lines) return;
        const range = EditorSelection.range(v.state.doc.line(lines.first).from, v.state.doc.line(lines.last).to);
        v.dispatch({ selection: EditorSelection.create([range]), effects: EditorView.scrollIntoView(range.from, { y: 'start', yMargin: 24 }),
          annotations: fromStore.of(true) });
      }
    };
    sync(useStudio.getState());
    const unsubscribe = useStudio.subscribe(sync);
    return () => {
      unsubscribe();
      v.destroy();
      view.current = null;
    };
  }, [readOnly]);

  return <div className="source-pane__editor" ref={host} />;
}
