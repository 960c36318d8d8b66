import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '@dap/testing';
import { parseOptions, runBench } from './run.ts';
import { maxInSlidingWindow, quantileSorted, summarize } from './lib/stats.ts';
import { moduleOf } from './lib/cpuprofile.ts';

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
      expect(existsSync(join(out, 'latest.json'))).toBe(true);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 30_000);
});
