/**
 * The navigation slice (issue 43): find a block (the search box), Subdiagram drill-down (the trail of parents, and a
 * run shown on the child's canvas), the diagram's chat sessions (listed, reopened, forgotten; the last one offered
 * after a reload), the gallery ("New from example"), and the runs list's filters and comparison.
 */
import type { StateCreator } from 'zustand';
import { api } from '../api/client';
import type { ExampleListed, RunData, SessionListed } from '../api/types';
import { childRunMemo, crumbBack, drillInto, runAddress, type Crumb } from '../model/drill';
import { filterQuery, NO_FILTER, type RunFilter } from '../model/runSearch';
import type { ChatTurn } from './chat';
import type { StudioState } from './index';

export interface NavSlice {
  searchOpen: boolean;
  /** the parents of the open file, when it was reached by drilling into a Subdiagram (Parent › child) */
  crumbs: Crumb[];
  /** the file the crumbs lead to (another file opened otherwise: the trail is gone) */
  crumbsFor: string | null;
  sessions: SessionListed[] | null;
  examples: ExampleListed[] | null;
  galleryOpen: boolean;
  runFilter: RunFilter;
  /** the two runs picked to compare (run ids), and their data once read */
  compareIds: string[];
  compared: [RunData, RunData] | null;

  setSearchOpen: (open: boolean) => void;
  /** opens the child of Subdiagram `block` of the open file (a run shown stays shown, on the child's canvas) */
  drill: (block: string) => Promise<void>;
  crumbTo: (index: number) => Promise<void>;
  loadSessions: () => Promise<void>;
  reopenSession: (session: string) => void;
  forgetSession: (session: string) => Promise<void>;
  setGalleryOpen: (open: boolean) => void;
  createFromExample: (example: string, path: string) => Promise<void>;
  setRunFilter: (filter: Partial<RunFilter>) => void;
  toggleCompare: (runId: string) => Promise<void>;
}

const LAST_SESSION = 'diagrama:chat-session:';

/** The session last used with `path` in this browser (offered after a reload). */
export function lastSession(path: string | null): string | null {
  if (!path) return null;
  try {
    return localStorage.getItem(LAST_SESSION + path);
  } catch {
    return null;
  }
}

export function rememberSession(path: string | null, session: string): void {
  if (!path) return;
  try {
    localStorage.setItem(LAST_SESSION + path, session);
  } catch {
    // remembering is optional
  }
}

/** A stored session's turns as the chat panel shows them. */
export function sessionTurns(session: SessionListed): ChatTurn[] {
  return session.runs.map((r) => ({ message: r.message ?? '', runId: r.run_id, status: r.status, reply: r.reply, error: null }));
}

const shownRunOf = childRunMemo();

/** The run as the canvas and the block's panel show it: on a child reached by drilling, the child's part of it. */
export function shownRun(s: Pick<StudioState, 'run' | 'crumbs' | 'crumbsFor' | 'path'>): RunData | null {
  const data = s.run?.data ?? null;
  const inChild = !!data && s.crumbs.length > 0 && s.crumbsFor === s.path && data.diagram === s.crumbs[0].path;
  return shownRunOf(data, inChild ? runAddress(s.crumbs) : '');
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export const createNavSlice: StateCreator<StudioState, [], [], NavSlice> = (set, get) => {
  async function openKeepingRun(path: string, crumbs: Crumb[]) {
    const shown = get().run;
    if (!(await get().open(path))) return;
    set({ crumbs, crumbsFor: crumbs.length ? path : null });
    if (!shown) return;
    if (shown.data && shown.data.status !== 'running') set({ run: shown });
    else void get().openRun(shown.runId);
  }

  return {
    searchOpen: false,
    crumbs: [],
    crumbsFor: null,
    sessions: null,
    examples: null,
    galleryOpen: false,
    runFilter: NO_FILTER,
    compareIds: [],
    compared: null,

    setSearchOpen(open) {
      if (open !== get().searchOpen) set({ searchOpen: open });
    },

    async drill(block) {
      const { path, compiled } = get();
      const child = compiled?.subdiagrams?.[block];
      if (!path || !child) return;
      if (!child.file) {
        get().toast(`${child.written} is not a diagram of this folder`, 'warning');
        return;
      }
      const crumbs = get().crumbsFor === path ? get().crumbs : [];
      await openKeepingRun(child.file, drillInto(crumbs, path, block));
    },

    async crumbTo(index) {
      const back = crumbBack(get().crumbs, index);
      if (!back) return;
      const block = get().crumbs[index].block;
      await openKeepingRun(back.path, back.crumbs);
      if (get().path === back.path) get().select([block], null);
    },

    async loadSessions() {
      const { path } = get();
      if (!path) return;
      try {
        const sessions = await api.sessions(path);
        if (get().path === path) set({ sessions });
      } catch {
        if (get().path === path) set({ sessions: [] });
      }
    },

    reopenSession(session) {
      const found = get().sessions?.find((s) => s.session === session);
      if (!found) return;
      rememberSession(get().path, session);
      set({
        chatSession: session, chatTurns: sessionTurns(found), chatting: false,
        chatMemory: { session, diagram: get().path, turns: found.turns, memory: found.memory, updated: found.updated, held_by: found.held_by },
      });
    },

    async forgetSession(session) {
      try {
        await api.forgetSession(session);
      } catch (e) {
        get().toast(`forget ${session}: ${message(e)}`, 'error');
        return;
      }
      if (get().chatSession === session) get().newChatSession();
      if (lastSession(get().path) === session) {
        try {
          localStorage.removeItem(LAST_SESSION + get().path);
        } catch {
          // optional
        }
      }
      await get().loadSessions();
    },

    setGalleryOpen(open) {
      set({ galleryOpen: open });
      if (open && !get().examples) {
        api.examples().then((examples) => set({ examples }), (e) => get().toast(`examples: ${message(e)}`, 'error'));
      }
    },

    async createFromExample(example, path) {
      try {
        const made = await api.copyExample(example, path);
        set({ galleryOpen: false });
        await get().refreshFiles();
        await get().open(made.path);
        get().toast(made.copied.length ? `${made.path} created, with ${made.copied.join(', ')}`
          : `${made.path} created (self-contained)`, 'success');
      } catch (e) {
        get().toast(`new from example: ${message(e)}`, 'error');
      }
    },

    setRunFilter(filter) {
      set({ runFilter: { ...get().runFilter, ...filter } });
      void get().loadRuns();
    },

    async toggleCompare(runId) {
      const ids = get().compareIds;
      const next = ids.includes(runId) ? ids.filter((i) => i !== runId) : [...ids, runId].slice(-2);
      set({ compareIds: next, compared: null });
      if (next.length !== 2) return;
      try {
        const [a, b] = await Promise.all(next.map((id) => api.run(id, 0)));
        if (get().compareIds.join() === next.join()) set({ compared: [a, b] });
      } catch (e) {
        get().toast(`compare: ${message(e)}`, 'error');
      }
    },
  };
};

/** The runs route's query for the slice's filter. */
export function runsQuery(s: Pick<NavSlice, 'runFilter'>): string {
  return filterQuery(s.runFilter);
}
