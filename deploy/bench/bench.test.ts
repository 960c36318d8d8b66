import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '@dap/testing';
import { parseOptions, runBench } from './run.ts';
import { maxInSlidingWindow, quantileSorted, summarize } from './lib/stats.ts';
import { moduleOf } from './lib/cpuprofile.ts';
import { calibrate, calibrationWork, parseProcStat, watchWindow } from './lib/conditions.ts';

describe('bench harness', () => {
  it('computes exact percentiles and sliding-window maxima', () => {
    const s = summarize([5, 1, 4, 2, 3, 6, 7, 8, 9, 10]);
    expect(s).toMatchObject({ count: 10, p50: 5, p90: 9, p99: 10, max: 10, mean: 5.5 });
    expect(quantileSorted(Float64Array.from([1, 2, 3, 4]), 0.5)).toBe(2);
    // (t - 1000, t]: 0 and 1000 are never in the same window; 0, 1, 500, 999 are (first at 999).
    expect(maxInSlidingWindow([0, 1, 500, 999, 1000, 3000], 1000)).toEqual({ max: 4, at: 999 });
    expect(maxInSlidingWindow([], 1000).max).toBe(0);
  });

  it('groups profile frames by package', () => {
    expect(moduleOf('file:///w/node_modules/express/lib/router/index.js', 'handle')).toBe('express');
    expect(moduleOf('file:///w/node_modules/@duckdb/node-api/lib/x.js', 'f')).toBe('@duckdb/node-api');
    expect(moduleOf('node:internal/streams/writable', 'x')).toBe('node:internal/streams');
    expect(moduleOf('node:_http_client', 'x')).toBe('node:_http_client');
    expect(moduleOf('file:///w/gateway/src/app.ts', 'x')).toBe('gateway');
    expect(moduleOf('', '(garbage collector)')).toBe('(garbage collector)');
  });

  it('parses flags and refuses unknown scenarios', () => {
    expect(parseOptions(['--quick'])).toMatchObject({ quick: true, reps: 1, durationSec: 3, pin: 'auto' });
    expect(parseOptions(['--reps', '5', '--no-pin', '--only', 'gateway,limiter'])).toMatchObject({ reps: 5, pin: 'off', only: ['gateway', 'limiter'] });
    expect(() => parseOptions(['--only', 'nope'])).toThrow(/unknown scenario/);
    expect(parseOptions(['--only', 'growth', '--growth', 'redis, gateway'])).toMatchObject({ only: ['growth'], growthParts: ['redis', 'gateway'] });
    expect(parseOptions([]).only).not.toContain('growth');
    expect(() => parseOptions(['--duration', '0'])).toThrow(/positive/);
  });

  it('runs a one-second scenario and writes the Markdown and JSON reports', async () => {
    const out = mkdtempSync(join(tmpdir(), 'bench-'));
    try {
      const { files } = await runBench(['--only', 'selftest', '--duration', '1', '--reps', '1', '--no-profile', '--out', out], repoRoot());
      expect(existsSync(files.md)).toBe(true);
      const report = JSON.parse(readFileSync(files.json, 'utf8'));
      expect(report.meta).toMatchObject({ cores: expect.any(Number), node: expect.stringMatching(/^v\d+/), date: expect.any(String), reps: 1 });
      expect(report.targets).toEqual([expect.objectContaining({ id: 'selftest.load', met: true })]);
      expect(report.scenarios.selftest.closed.requests).toBeGreaterThan(0);
      expect(report.scenarios.selftest.paced.latency.p99).toBeGreaterThan(0);
      expect(readFileSync(files.md, 'utf8')).toContain('| selftest | load generator answers');
      expect(report.conditions.calibration.start.bestMs).toBeGreaterThan(0);
      expect(report.conditions.calibration.end.bestMs).toBeGreaterThan(0);
      expect(report.conditions.scenarios.selftest).toMatchObject({ loadAverageStart: expect.any(Number), stealPct: expect.any(Number) });
      expect(readFileSync(files.md, 'utf8')).toContain('## Run conditions');
      expect(existsSync(join(out, 'latest.json'))).toBe(true);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 30_000);
});

describe('run conditions', () => {
  it('the calibration workload is the same work on every run', () => {
    expect(calibrationWork()).toBe(calibrationWork());
    expect(calibrationWork()).toMatch(/^[0-9a-f]{16}:\d+:5000$/);
    const c = calibrate(3);
    expect(c.rounds).toBe(3);
    expect(c.bestMs).toBeGreaterThan(0);
    expect(c.medianMs).toBeGreaterThanOrEqual(c.bestMs);
  });

  it('reads steal and busy time from /proc/stat', () => {
    const at = (user: number, idle: number, steal: number) => parseProcStat(`cpu  ${user} 0 0 ${idle} 0 0 0 ${steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n`);
    expect(at(10, 20, 5)).toEqual({ busy: 10, idle: 20, steal: 5, total: 35 });
    const samples = [at(100, 100, 0), at(150, 130, 20)];
    const loads = [1.25, 2.5];
    const w = watchWindow(
      () => samples.shift()!,
      () => loads.shift()!,
    ).end();
    expect(w).toEqual({ loadAverageStart: 1.3, loadAverageEnd: 2.5, cpuBusyPct: 50, stealPct: 20 });
  });
});
