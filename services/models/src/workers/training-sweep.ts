import type { Lifecycle } from '@dap/lifecycle';
import type { TrainingService } from '../domain/training.service.ts';

/**
 * Claims the training jobs whose lease lapsed (the instance running them stopped) and runs them here: at
 * start-up, then every half lease, so a job waits at most a lease and a half for a new instance. Only an
 * instance with training workers sweeps.
 */
export function startTrainingSweep(life: Lifecycle, training: Pick<TrainingService, 'sweep' | 'trains'>, leaseMs: number): void {
  if (!training.trains) return;
  life.runEvery('training sweep', Math.max(500, Math.floor(leaseMs / 2)), () => training.sweep(), { atStart: true });
}
