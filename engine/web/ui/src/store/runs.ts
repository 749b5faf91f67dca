/**
 * The runs slice: a run started from the page (or one of the past runs opened), followed until it ends; the
 * diagram's past runs; scenarios saved from a run and the folder's scenarios run.
 */
import type { StateCreator } from 'zustand';
import { api } from '../api/client';
import type { RunData, RunListed, ScenarioResult } from '../api/types';
import type { StudioState } from './index';

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

  startRun: (inputs: Record<string, unknown>, offline: boolean) => Promise<void>;
  openRun: (runId: string) => Promise<void>;
  closeRun: () => void;
  loadRuns: () => Promise<void>;
  /** another diagram is open: its runs are not this one's */
  forgetRuns: () => void;
  saveScenario: (path: string) => Promise<void>;
  runScenarios: (folder?: string, file?: string) => Promise<void>;
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
          get().toast(`run ${data.status}`, data.status === 'succeeded' ? 'success' : 'error');
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
      set({ run: { runId, data: null, events: [] } });
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
        const runs = await api.runs(path);
        if (get().path === path) set({ runs });
      } catch {
        // the runs list is optional
      }
    },

    forgetRuns() {
      if (runTimer) clearTimeout(runTimer);
      set({ run: null, runs: [], scenarioResults: null });
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
