/**
 * Bounded Nelder–Mead minimisation: the simplex lives in [lo, hi]^d (points are clamped), which is all the
 * smoothing-parameter fits here need. Deterministic, allocation-light, and capped in evaluations.
 */
export interface MinimizeResult {
  x: number[];
  value: number;
  evaluations: number;
}

export function nelderMead(
  f: (x: readonly number[]) => number,
  start: readonly number[],
  opts: { lo: number; hi: number; step?: number; maxEvaluations?: number; tolerance?: number },
): MinimizeResult {
  const d = start.length;
  const clamp = (v: number) => Math.min(opts.hi, Math.max(opts.lo, v));
  const maxEvals = opts.maxEvaluations ?? 200;
  const tol = opts.tolerance ?? 1e-10;
  const step = opts.step ?? 0.1;
  let evaluations = 0;
  const evaluate = (x: number[]) => {
    evaluations++;
    const v = f(x);
    return Number.isFinite(v) ? v : Number.MAX_VALUE;
  };

  const simplex: { x: number[]; v: number }[] = [];
  const x0 = start.map(clamp);
  simplex.push({ x: x0, v: evaluate(x0) });
  for (let i = 0; i < d; i++) {
    const x = x0.slice();
    x[i] = x[i]! + step <= opts.hi ? x[i]! + step : x[i]! - step;
    x[i] = clamp(x[i]!);
    simplex.push({ x, v: evaluate(x) });
  }

  while (evaluations < maxEvals) {
    simplex.sort((a, b) => a.v - b.v);
    const best = simplex[0]!;
    const worst = simplex[d]!;
    if (Math.abs(worst.v - best.v) <= tol * (Math.abs(best.v) + tol)) break;
    const centroid = new Array<number>(d).fill(0);
    for (let i = 0; i < d; i++) for (let j = 0; j < d; j++) centroid[j]! += simplex[i]!.x[j]! / d;
    const along = (t: number) => centroid.map((c, j) => clamp(c + t * (worst.x[j]! - c)));

    const reflected = along(-1);
    const vr = evaluate(reflected);
    if (vr < best.v) {
      const expanded = along(-2);
      const ve = evaluate(expanded);
      simplex[d] = ve < vr ? { x: expanded, v: ve } : { x: reflected, v: vr };
      continue;
    }
    if (vr < simplex[d - 1]!.v) {
      simplex[d] = { x: reflected, v: vr };
      continue;
    }
    const contracted = vr < worst.v ? along(-0.5) : along(0.5);
    const vc = evaluate(contracted);
    if (vc < Math.min(vr, worst.v)) {
      simplex[d] = { x: contracted, v: vc };
      continue;
    }
    // Shrink towards the best point.
    for (let i = 1; i <= d; i++) {
      const x = simplex[i]!.x.map((v, j) => clamp(best.x[j]! + 0.5 * (v - best.x[j]!)));
      simplex[i] = { x, v: evaluate(x) };
    }
  }
  simplex.sort((a, b) => a.v - b.v);
  return { x: simplex[0]!.x, value: simplex[0]!.v, evaluations };
}
