import type { Lifecycle } from '@dap/lifecycle';
import type { TrainingJobs } from './training-jobs.ts';

/**
 * Claims the training jobs whose lease lapsed (the instance running them stopped) and runs them here: at
 * start-up, then every half lease, so a job waits at most a lease and a half for a new instance. Only an
 * instance with training workers (`jobs`) sweeps.
 */
export function startTrainingSweep(life: Lifecycle, jobs: Pick<TrainingJobs, 'sweep'> | null, leaseMs: number): void {
  if (!jobs) return;
  life.runEvery('training sweep', Math.max(500, Math.floor(leaseMs / 2)), () => jobs.sweep(), { atStart: true });
}
