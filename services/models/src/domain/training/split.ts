/** Seeded splits and sampling (mulberry32 from @dap/random): the same seed and data give the same model. */
import { mulberry32 } from '@dap/random';

/** Fisher-Yates in place. */
export function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

export interface Split {
  train: number[];
  test: number[];
  stratified: boolean;
}

/**
 * A seeded hold-out split of row indices. With `strata` (class indices) each class is split on its own, so
 * every class keeps the same share in both parts and a class with one row stays in training.
 */
export function holdoutSplit(n: number, testFraction: number, seed: number, strata?: readonly number[]): Split {
  const random = mulberry32(seed);
  if (!strata) {
    const order = shuffle(
      Array.from({ length: n }, (_, i) => i),
      random,
    );
    const testCount = Math.round(n * testFraction);
    return { test: order.slice(0, testCount), train: order.slice(testCount), stratified: false };
  }
  const groups = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const g = groups.get(strata[i]!);
    if (g) g.push(i);
    else groups.set(strata[i]!, [i]);
  }
  const train: number[] = [];
  const test: number[] = [];
  for (const key of [...groups.keys()].sort((a, b) => a - b)) {
    const rows = shuffle(groups.get(key)!, random);
    const testCount = Math.min(rows.length - 1, Math.round(rows.length * testFraction));
    test.push(...rows.slice(0, testCount));
    train.push(...rows.slice(testCount));
  }
  // Interleave classes so a prefix of the training rows (random forests train on one) is a fair sample.
  return { train: shuffle(train, random), test: shuffle(test, random), stratified: true };
}
