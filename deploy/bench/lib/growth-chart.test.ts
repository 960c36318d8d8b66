import { describeGrowth, growthExponents, niceStep, renderGrowthSvg, tickLabel, type GrowthChart } from './growth-chart.ts';
import { toMarkdown, type BenchReport } from './report.ts';

const rows = (values: number[]) => values.map((value, i) => ({ size: 10 ** (i + 6), label: `${10 ** i}M rows`, value }));

describe('growth charts', () => {
  it('gives the log-log exponent between sizes', () => {
    // ×10 size: ×10 value is linear (1), ×100 quadratic (2), the same value flat (0).
    expect(growthExponents(rows([1, 10, 1000]))).toEqual([1, 2]);
    expect(growthExponents(rows([5, 5, 5]))).toEqual([0, 0]);
    expect(growthExponents(rows([0, 5, 10]))).toEqual([null, 0.3]);
  });

  it('says which steps depart from linear, for totals and for per-unit figures', () => {
    const total: GrowthChart = { id: 't', title: 'T', xLabel: 'rows', yLabel: 'ms', kind: 'proportional', series: [{ name: 'api', points: rows([100, 1_000, 30_000]) }] };
    expect(describeGrowth(total)).toEqual(['api: 1M rows → 10M rows: exponent 1 (linear); 10M rows → 100M rows: exponent 1.48 (faster than linear)']);
    const perUnit: GrowthChart = { ...total, kind: 'flat', series: [{ name: 'cpu', points: rows([200, 210, 100]) }] };
    expect(describeGrowth(perUnit)).toEqual(['cpu: 1M rows → 10M rows: exponent 0.02 (flat); 10M rows → 100M rows: exponent -0.32 (falls with size)']);
  });

  it('draws every point on a log x axis, with the linear expectation dashed', () => {
    const chart: GrowthChart = { id: 'c', title: 'Ingest <time>', xLabel: 'size', yLabel: 's', kind: 'proportional', series: [{ name: 'ingest', points: rows([2, 20, 200]) }] };
    const svg = renderGrowthSvg(chart, 640, 360);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('Ingest &lt;time&gt;');
    expect(svg.match(/<circle /g)).toHaveLength(3);
    // Left margin 70, plot width 530: the sizes 1e6, 1e7, 1e8 fall at 70, 335 and 600.
    const solid = /<polyline fill="none" stroke="#2563eb" stroke-width="2" points="([^"]+)"/
      .exec(svg)![1]!
      .split(' ')
      .map((p) => Number(p.split(',')[0]));
    expect(solid).toEqual([70, 335, 600]);
    expect([niceStep(0.3), niceStep(1_970), niceStep(26)]).toEqual([0.5, 2_000, 50]);
    // The dashed line of a linear total through the first point meets the others: the data is linear here.
    const dashed = /stroke-dasharray="4 4" opacity="0.6" points="([^"]+)"/.exec(svg)![1];
    expect(dashed).toBe(/stroke-width="2" points="([^"]+)"/.exec(svg)![1]);
    expect(tickLabel(1_500_000)).toBe('1.5M');
    expect(tickLabel(12_000)).toBe('12k');
    expect(tickLabel(0.4251)).toBe('0.425');
  });

  it('puts each chart, its points and its exponents into the Markdown report', () => {
    const chart: GrowthChart = {
      id: 'deliveries',
      title: 'Deliveries/s',
      xLabel: 'endpoints',
      yLabel: 'deliveries/s',
      kind: 'flat',
      series: [{ name: 'rate', points: rows([900, 850, 400]) }],
    };
    const report = {
      meta: {
        date: 'd',
        host: 'h',
        cores: 2,
        cpuModel: 'x',
        memoryGb: 1,
        node: 'v24',
        platform: 'linux',
        loadAverageStart: [0],
        loadAverageEnd: [0],
        args: [],
        quick: true,
        reps: 1,
        durationSec: 1,
        warmupSec: 1,
        pinning: { loadgen: null, servers: null, note: '' },
        servicesAs: '',
        wallClockSec: 1,
      },
      conditions: { calibration: { start: { bestMs: 1, rounds: 1 }, end: { bestMs: 1, rounds: 1 }, driftPct: 0 }, stack: null, mongoWarmup: null, scenarios: {} },
      targets: [],
      charts: [chart],
      scenarios: {},
      profiles: [],
      notes: [],
    } as unknown as BenchReport;
    const md = toMarkdown(report, (c) => `run-${c.id}.svg`);
    expect(md).toContain('## How cost grows');
    expect(md).toContain('![Deliveries/s](run-deliveries.svg)');
    expect(md).toContain('| rate | 100M rows | 400 | -0.33 |');
    expect(md).toContain('10M rows → 100M rows: exponent -0.33 (falls with size)');
  });
});
