/**
 * The context menu on a block or a link: what a right-click offers, each item an action of the store. Items that
 * cannot apply are listed, disabled, saying why (open subdiagram: only a Subdiagram whose child is a file here). "Run from here" replays the past run shown in the Run tab from the block (when it is
 * durable and reached it: `replayOff` says why not).
 */
import { useEffect, useRef } from 'react';
import { NEXT } from '../../model/format';
import { parseEdgeId } from '../../model/graph';
import { replayOff, useStudio, type ContextMenu as Menu } from '../../store';
import { askGroup } from './SelectionToolbar';

interface Item {
  label: string;
  keys?: string;
  run?: () => void;
  /** why it is off */
  off?: string;
  danger?: boolean;
}

/** Why "open subdiagram" is off for `block` (undefined: it is on). */
function subdiagramOff(s: ReturnType<typeof useStudio.getState>, block: string): string | undefined {
  const child = s.compiled?.subdiagrams?.[block];
  if (!child) return 'not a Subdiagram with a literal diagram path';
  return child.file ? undefined : `${child.written} is not a diagram of this folder`;
}

function blockItems(menu: Menu): Item[] {
  const s = useStudio.getState();
  const readOnly = !!s.session?.read_only;
  const ro = readOnly ? 'read-only session' : undefined;
  return [
    { label: 'Properties', run: () => s.focusBlock(menu.id) },
    { label: 'Duplicate', keys: 'Ctrl+D', off: ro, run: () => { s.select([menu.id], null); s.copy(); s.pasteClipboard(); } },
    { label: 'Copy', keys: 'Ctrl+C', run: () => { s.select([menu.id], null); s.copy(); } },
    { label: 'Show in YAML', run: () => { s.setPaneOpen(true); s.select([menu.id], null); } },
    { label: 'Run from here', off: replayOff(s.run, menu.id) ?? undefined, run: () => void s.replayFrom(menu.id) },
    { label: 'Open subdiagram', off: subdiagramOff(s, menu.id), run: () => void s.drill(menu.id) },
    ...(s.selection.length > 1 ? arrangeItems(ro) : []),
    { label: 'Delete', keys: 'Del', off: ro, danger: true, run: () => { s.select([menu.id], null); s.deleteSelection(); } },
  ];
}

/** For a multi-selection: align, distribute, group (the selection toolbar's, with their keys). */
function arrangeItems(ro: string | undefined): Item[] {
  const s = useStudio.getState();
  const few = s.selection.length < 3 ? 'select three blocks or more' : undefined;
  return [
    { label: 'Align left', keys: 'Alt+Shift+L', off: ro, run: () => s.alignSelection('left') },
    { label: 'Align top', keys: 'Alt+Shift+T', off: ro, run: () => s.alignSelection('top') },
    { label: 'Distribute horizontally', keys: 'Alt+Shift+H', off: ro ?? few, run: () => s.distributeSelection('horizontal') },
    { label: 'Distribute vertically', keys: 'Alt+Shift+V', off: ro ?? few, run: () => s.distributeSelection('vertical') },
    { label: 'Group in a frame', keys: 'Ctrl+G', off: ro, run: askGroup },
  ];
}

function linkItems(menu: Menu): Item[] {
  const s = useStudio.getState();
  const ro = s.session?.read_only ? 'read-only session' : undefined;
  const edge = parseEdgeId(menu.id);
  return [
    { label: 'Edit condition', off: edge?.kind === NEXT ? undefined : 'only next links have a condition',
      run: () => { s.select([], menu.id); s.setPanelTab('properties'); } },
    { label: `Go to ${edge?.source ?? 'source'}`, run: () => edge && s.focusBlock(edge.source) },
    { label: 'Delete link', keys: 'Del', off: ro, danger: true, run: () => { s.select([], menu.id); s.deleteSelection(); } },
  ];
}

export function ContextMenu() {
  const menu = useStudio((s) => s.contextMenu);
  const list = useRef<HTMLUListElement>(null);
  useEffect(() => {
    if (!menu) return;
    list.current?.querySelector<HTMLButtonElement>('button:not(:disabled)')?.focus();
    const close = (e: Event) => {
      if (e instanceof KeyboardEvent && e.key !== 'Escape') return;
      if (e.type === 'mousedown' && list.current?.contains(e.target as Node)) return;
      useStudio.getState().setContextMenu(null);
    };
    window.addEventListener('mousedown', close);
    window.addEventListener('keydown', close);
    window.addEventListener('blur', close);
    return () => {
      window.removeEventListener('mousedown', close);
      window.removeEventListener('keydown', close);
      window.removeEventListener('blur', close);
    };
  }, [menu]);
  if (!menu) return null;
  const items = menu.kind === 'block' ? blockItems(menu) : linkItems(menu);
  const x = Math.min(menu.x, window.innerWidth - 220);
  const y = Math.min(menu.y, window.innerHeight - items.length * 32 - 12);
  return (
    <ul ref={list} className="context-menu" role="menu" aria-label={menu.kind === 'block' ? `Block ${menu.id}` : 'Link'} style={{ left: x, top: y }}>
      {items.map((item) => (
        <li key={item.label} role="none">
          <button type="button" role="menuitem" disabled={!item.run || !!item.off} title={item.off}
            className={item.danger ? 'is-danger' : undefined}
            onClick={() => { useStudio.getState().setContextMenu(null); item.run?.(); }}>
            <span>{item.label}</span>{item.keys && <kbd>{item.keys}</kbd>}
          </button>
        </li>
      ))}
    </ul>
  );
}
