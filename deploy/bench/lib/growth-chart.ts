/**
 * How a cost grows with size: a series of measured points per curve, the growth exponent between sizes
 * (log-log slope: 1 is linear, 0 flat, above 1 super-linear) and an SVG line chart with a dashed line for
 * what linear growth from the smallest size would give. Written for the bench report's "How cost grows".
 */

export interface GrowthPoint {
  /** The size on the x axis (rows, bytes, keys, endpoints…). */
  size: number;
  /** How the size reads in a table ("10M rows"). */
  label: string;
  value: number;
}

export interface GrowthSeries {
  name: string;
  points: GrowthPoint[];
}

export interface GrowthChart {
  id: string;
  title: string;
  xLabel: string;
  yLabel: string;
  series: GrowthSeries[];
  /**
   * `proportional`: a total that linear growth scales with size (time, bytes); the dashed line is
   * value(smallest) × size / smallest. `flat`: a per-unit figure (µs per request, deliveries/s) that linear
   * growth keeps flat; the dashed line is the smallest size's value.
   */
  kind: 'proportional' | 'flat';
}

/** log(v2/v1) / log(s2/s1) between consecutive sizes; null where a value is not positive. */
export function growthExponents(points: GrowthPoint[]): Array<number | null> {
  const out: Array<number | null> = [];
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1]!;
    const b = points[i]!;
    if (!(a.value > 0 && b.value > 0 && b.size > a.size)) out.push(null);
    else out.push(Math.round((Math.log(b.value / a.value) / Math.log(b.size / a.size)) * 100) / 100);
  }
  return out;
}

/**
 * A sentence on each step of a series: its exponent and whether it departs from the kind's linear
 * expectation (proportional: exponent near 1; flat: near 0) by more than `tolerance`.
 */
export function describeGrowth(chart: GrowthChart, tolerance = 0.2): string[] {
  const expected = chart.kind === 'proportional' ? 1 : 0;
  return chart.series.map((s) => {
    const exps = growthExponents(s.points);
    const steps = exps.map((e, i) => {
      const from = s.points[i]!.label;
      const to = s.points[i + 1]!.label;
      if (e === null) return `${from} → ${to}: n/a`;
      const near = Math.abs(e - expected) <= tolerance;
      const verdict =
        chart.kind === 'proportional'
          ? near
            ? 'linear'
            : e > expected
              ? 'faster than linear'
              : 'slower than linear'
          : near
            ? 'flat'
            : e > expected
              ? 'rises with size'
              : 'falls with size';
      return `${from} → ${to}: exponent ${e} (${verdict})`;
    });
    return `${s.name}: ${steps.join('; ')}`;
  });
}

const COLORS = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed'];
const esc = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** A compact number for an axis tick: 1.2k, 35M, 0.42. */
export function tickLabel(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) return `${+(v / 1e9).toPrecision(3)}G`;
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toPrecision(3)}k`;
  return `${+v.toPrecision(3)}`;
}

/** A round tick step (1, 2 or 5 times a power of ten) at least `raw`. */
export function niceStep(raw: number): number {
  const pow = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((f) => f * pow).find((s) => s >= raw)!;
}

/**
 * The chart as an SVG document: sizes on a log x axis (the sizes span decades), values on a linear y axis
 * from zero, one line per series with its points labelled, and each series' linear expectation dashed.
 */
export function renderGrowthSvg(chart: GrowthChart, width = 640, height = 360): string {
  const m = { left: 70, right: 40, top: 40, bottom: 70 };
  const w = width - m.left - m.right;
  const h = height - m.top - m.bottom;
  const all = chart.series.flatMap((s) => s.points);
  const sizes = [...new Set(all.map((p) => p.size))].sort((a, b) => a - b);
  const linear = chart.series.map((s) => {
    const first = s.points[0];
    return first ? s.points.map((p) => ({ size: p.size, value: chart.kind === 'proportional' ? (first.value * p.size) / first.size : first.value })) : [];
  });
  const top = Math.max(1e-9, ...all.map((p) => p.value), ...linear.flat().map((p) => p.value));
  const step = niceStep(top / 4);
  const yMax = Math.ceil((top * 1.05) / step) * step;
  const lx0 = Math.log10(sizes[0] ?? 1);
  const lx1 = Math.log10(sizes.at(-1) ?? 10);
  const x = (size: number) => m.left + (lx1 === lx0 ? w / 2 : ((Math.log10(size) - lx0) / (lx1 - lx0)) * w);
  const y = (v: number) => m.top + h - (v / yMax) * h;
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`);
  parts.push(`<rect width="${width}" height="${height}" fill="#fff"/>`);
  parts.push(`<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${esc(chart.title)}</text>`);
  // Axes and grid.
  parts.push(`<line x1="${m.left}" y1="${m.top + h}" x2="${m.left + w}" y2="${m.top + h}" stroke="#333"/>`);
  parts.push(`<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${m.top + h}" stroke="#333"/>`);
  for (let v = 0; v <= yMax + step / 2; v += step) {
    parts.push(`<line x1="${m.left}" y1="${y(v)}" x2="${m.left + w}" y2="${y(v)}" stroke="#e5e7eb"/>`);
    parts.push(`<text x="${m.left - 6}" y="${y(v) + 4}" text-anchor="end">${esc(tickLabel(v))}</text>`);
  }
  for (const size of sizes) {
    const label = all.find((p) => p.size === size)!.label;
    parts.push(`<line x1="${x(size)}" y1="${m.top + h}" x2="${x(size)}" y2="${m.top + h + 5}" stroke="#333"/>`);
    parts.push(`<text x="${x(size)}" y="${m.top + h + 18}" text-anchor="middle">${esc(label)}</text>`);
  }
  parts.push(`<text x="${m.left + w / 2}" y="${height - 30}" text-anchor="middle">${esc(chart.xLabel)} (log scale)</text>`);
  parts.push(`<text transform="translate(16 ${m.top + h / 2}) rotate(-90)" text-anchor="middle">${esc(chart.yLabel)}</text>`);
  // Series, their linear expectations and a legend.
  chart.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const line = (pts: Array<{ size: number; value: number }>) => pts.map((p) => `${x(p.size).toFixed(1)},${y(p.value).toFixed(1)}`).join(' ');
    parts.push(`<polyline fill="none" stroke="${color}" stroke-width="1" stroke-dasharray="4 4" opacity="0.6" points="${line(linear[i]!)}"/>`);
    parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${line(s.points)}"/>`);
    for (const p of s.points) {
      parts.push(
        `<circle cx="${x(p.size).toFixed(1)}" cy="${y(p.value).toFixed(1)}" r="3.5" fill="${color}"><title>${esc(`${s.name} at ${p.label}: ${p.value}`)}</title></circle>`,
      );
      parts.push(`<text x="${x(p.size).toFixed(1)}" y="${(y(p.value) - 8).toFixed(1)}" text-anchor="middle" fill="${color}">${esc(tickLabel(p.value))}</text>`);
    }
    const ly = height - 12;
    const lx = m.left + i * 170;
    parts.push(`<line x1="${lx}" y1="${ly - 4}" x2="${lx + 18}" y2="${ly - 4}" stroke="${color}" stroke-width="2"/>`);
    parts.push(`<text x="${lx + 22}" y="${ly}">${esc(s.name)}</text>`);
  });
  parts.push(`<text x="${m.left + w}" y="${height - 12}" text-anchor="end" fill="#6b7280">dashed: linear from the smallest size</text>`);
  parts.push('</svg>');
  return parts.join('\n');
}
