import type { DatasetStore } from '@dap/datasets';
import type { Lifecycle } from '@dap/lifecycle';

/**
 * Removes replaced dataset files once their grace period is over, also those of sources that are never synced
 * again: every half grace period, between 10 s and 10 min.
 */
export function startRetiredFileSweep(life: Lifecycle, store: Pick<DatasetStore, 'sweepRetired'>, graceMs: number): void {
  life.runEvery('retired-file sweep', Math.min(Math.max(graceMs / 2, 10_000), 600_000), () => store.sweepRetired());
}
