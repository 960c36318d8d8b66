/** Seeded data for the documented built-in backtests and for tests: the same numbers on every run. */
import { mulberry32 } from '@dap/random';

/** Standard normal draws (Box–Muller) from a uniform source. */
export function gaussian(uniform: () => number): () => number {
  return () => {
    const u = Math.max(uniform(), Number.EPSILON);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
  };
}

/** level + slope·t + amplitude·sin(2πt/period) + N(0, noise²), the noise optionally clipped to ±clip·noise. */
export function seasonalSeries(opts: { length: number; period: number; level: number; slope: number; amplitude: number; noise: number; seed: number; clip?: number }): number[] {
  const normal = gaussian(mulberry32(opts.seed));
  const clip = opts.clip ?? Infinity;
  return Array.from({ length: opts.length }, (_, t) => {
    const e = Math.max(-clip, Math.min(clip, normal()));
    return opts.level + opts.slope * t + opts.amplitude * Math.sin((2 * Math.PI * t) / opts.period) + opts.noise * e;
  });
}
