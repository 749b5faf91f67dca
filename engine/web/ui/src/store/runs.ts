/**
 * The runs slice: a run started from the page (or one of the past runs opened), followed until it ends; the
 * diagram's past runs; scenarios saved from a run and the folder's scenarios run. Durable runs: a waiting run's
 * answer (its problems when the form refuses it), an interrupted run resumed, a past run replayed from a block
 * (`replayFrom`, the canvas's "Run from here"); each is then followed like a run started here.
 */
import type { StateCreator } from 'zustand';
import { ApiError, api } from '../api/client';
import type { RunData, RunListed, ScenarioResult } from '../api/types';
import type { StudioState } from './index';
import { runsQuery } from './nav';

export interface ActiveRun {
  runId: string;
  data: RunData | null;
  events: RunData['events'];
}

export interface RunsSlice {
  run: ActiveRun | null;
  runs: RunListed[];
  scenarioResults: ScenarioResult[] | null;
  scenariosRunning: boolean;
  /** runs from the page answer requests offline (the server may allow online: `diagrama serve --allow-online`) */
  offline: boolean;
  /** what the server found wrong with the answer last sent to the shown run's Wait; null once one is taken */
  answerProblems: string[] | null;

  startRun: (inputs: Record<string, unknown>, offline: boolean) => Promise<void>;
  openRun: (runId: string) => Promise<void>;
  closeRun: () => void;
  loadRuns: () => Promise<void>;
  /** another diagram is open: its runs are not this one's */
  forgetRuns: () => void;
  saveScenario: (path: string) => Promise<void>;
  runScenarios: (folder?: string, file?: string) => Promise<void>;
  setOffline: (offline: boolean) => void;
  /** answers the shown waiting run's Wait, or (no answer) resumes the shown interrupted run; then follows it */
  answerWait: (answer?: unknown) => Promise<void>;
  /** a new run from `block` with the scope the shown past run had there; the panel follows it */
  replayFrom: (block: string) => Promise<void>;
}

/** Why "run from here" is off for `block` (null: it is on): a past run must be shown, durable, and have reached it. */
export function replayOff(run: ActiveRun | null, block: string): string | null {
  const data = run?.data;
  if (!data) return 'open a past run first (Run tab)';
  if (data.status === 'running') return 'the run is still going';
  if (!data.checkpointed) return 'this run kept no checkpoints (durable: false, or an older run)';
  if (!data.blocks.includes(block)) return `this run never reached ${block}`;
  return null;
}

const RUN_POLL_MS = 300;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export const createRunsSlice: StateCreator<StudioState, [], [], RunsSlice> = (set, get) => {
  let runTimer: ReturnType<typeof setTimeout> | null = null;

  /** Reads the run's new events until it is over, then says how it ended and lists it among the past runs. */
  function follow(runId: string) {
    if (runTimer) clearTimeout(runTimer);
    const tick = async () => {
      const current = get().run;
      if (!current || current.runId !== runId) return;
      try {
        const data = await api.run(runId, current.events.length);
        const still = get().run;
        if (!still || still.runId !== runId) return;
        set({ run: { runId, data, events: [...still.events, ...data.events] } });
        if (data.status === 'running') runTimer = setTimeout(tick, RUN_POLL_MS);
        else {
          const kind = data.status === 'succeeded' ? 'success' : data.status === 'waiting' ? 'info' : 'error';
          get().toast(data.status === 'waiting' ? 'run waiting for an answer' : `run ${data.status}`, kind);
          void get().loadRuns();
        }
      } catch (e) {
        get().toast(`run: ${message(e)}`, 'error');
      }
    };
    runTimer = setTimeout(tick, 0);
  }

  return {
    run: null,
    runs: [],
    scenarioResults: null,
    scenariosRunning: false,
    offline: true,
    answerProblems: null,

    async startRun(inputs, offline) {
      const { path, session } = get();
      if (!path) return;
      try {
        const r = await api.startRun(path, inputs, session?.allow_online ? offline : true);
        set({ run: { runId: r.run_id, data: null, events: [] }, panelTab: 'run' });
        follow(r.run_id);
        void get().loadRuns();
      } catch (e) {
        get().toast(`run: ${message(e)}`, 'error');
      }
    },

    async openRun(runId) {
      set({ run: { runId, data: null, events: [] }, answerProblems: null });
      follow(runId);
    },

    closeRun() {
      if (runTimer) clearTimeout(runTimer);
      set({ run: null });
    },

    async loadRuns() {
      const { path } = get();
      if (!path) return;
      try {
        const runs = await api.runs(path, runsQuery(get()));
        if (get().path === path) set({ runs });
      } catch {
        // the runs list is optional
      }
    },

    forgetRuns() {
      if (runTimer) clearTimeout(runTimer);
      set({ run: null, runs: [], scenarioResults: null, answerProblems: null, compareIds: [], compared: null, sessions: null });
      get().newChatSession();
    },

    setOffline(offline) {
      set({ offline });
    },

    async answerWait(answer) {
      const run = get().run;
      if (!run) return;
      try {
        await api.resume(run.runId, !get().session?.allow_online || get().offline, answer);
      } catch (e) {
        if (e instanceof ApiError && e.data.problems) set({ answerProblems: e.data.problems });
        else get().toast(`answer: ${message(e)}`, 'error');
        return;
      }
      // the same run goes on (its trace grows): read it again from its start
      set({ run: { runId: run.runId, data: null, events: [] }, answerProblems: null, panelTab: 'run' });
      follow(run.runId);
    },

    async replayFrom(block) {
      const run = get().run;
      if (!run) return;
      try {
        const r = await api.replay(run.runId, block, !get().session?.allow_online || get().offline);
        set({ run: { runId: r.run_id, data: null, events: [] }, answerProblems: null, panelTab: 'run' });
        follow(r.run_id);
        void get().loadRuns();
      } catch (e) {
        get().toast(`run from ${block}: ${message(e)}`, 'error');
      }
    },

    async saveScenario(scenarioPath) {
      const run = get().run;
      if (!run) return;
      try {
        const r = await api.saveScenario(run.runId, scenarioPath);
        get().toast(`saved scenario ${r.path}`, 'success');
      } catch (e) {
        get().toast(message(e), 'error');
      }
    },

    async runScenarios(folder = '.', file) {
      set({ scenariosRunning: true, panelTab: 'run' });
      try {
        const r = await api.runScenarios(folder, file);
        set({ scenarioResults: r.results, scenariosRunning: false });
      } catch (e) {
        set({ scenariosRunning: false });
        get().toast(`scenarios: ${message(e)}`, 'error');
      }
    },
  };
};
