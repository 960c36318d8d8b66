import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { createLogger } from '@dap/logger';
import { DASHBOARD_CSP, dashboardRoutes } from './dashboard.routes.ts';

const logger = createLogger({ name: 'test', level: 'silent' });

async function serve(dir: string) {
  const app = express();
  dashboardRoutes({ dir, logger })(app);
  // What the gateway mounts after the dashboard: the API and a JSON 404.
  app.all('/v1/*rest', (_req, res) => void res.json({ api: true }));
  app.use((_req, res) => void res.status(404).json({ notFound: true }));
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('dashboard static routes', () => {
  let dir: string;
  let srv: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dash-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>app</title>');
    writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log(1)');
    writeFileSync(join(dir, 'favicon.svg'), '<svg/>');
    writeFileSync(join(dir, '.sources.sha256'), 'stamp');
    writeFileSync(join(tmpdir(), 'outside-secret.txt'), 'secret');
    srv = await serve(dir);
  });
  afterAll(async () => {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves index.html at / and at client-side routes, never cached, with the strict CSP', async () => {
    for (const path of ['/', '/settings/api-keys', '/sources/src_1', '/analytics/reports']) {
      const res = await fetch(`${srv.url}${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(await res.text()).toContain('<title>app</title>');
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    }
    expect(DASHBOARD_CSP).toContain("script-src 'self'");
    expect(DASHBOARD_CSP).toContain("frame-ancestors 'none'");
    expect(DASHBOARD_CSP).not.toContain('unsafe-inline');
  });

  it('serves hashed assets as immutable and answers a missing file with the app 404, not the index', async () => {
    const js = await fetch(`${srv.url}/assets/index-abc123.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const missing = await fetch(`${srv.url}/assets/index-gone.js`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ notFound: true });
    expect((await fetch(`${srv.url}/.sources.sha256`)).status).toBe(404);
    expect((await fetch(`${srv.url}/..%2foutside-secret.txt`)).status).not.toBe(200);
  });

  it('never answers API or operations paths, nor anything but GET and HEAD', async () => {
    const api = await fetch(`${srv.url}/v1/sources`);
    expect(await api.json()).toEqual({ api: true });
    expect(api.headers.get('content-security-policy')).toBeNull();
    for (const path of ['/v1', '/docs', '/healthz', '/readyz', '/metrics', '/docs/x']) {
      const res = await fetch(`${srv.url}${path}`);
      expect({ path, type: res.headers.get('content-type') }).toEqual({ path, type: expect.stringMatching(/json/) });
    }
    const post = await fetch(`${srv.url}/settings`, { method: 'POST' });
    expect(post.status).toBe(404);
    const head = await fetch(`${srv.url}/models`, { method: 'HEAD' });
    expect(head.status).toBe(200);
  });

  it('answers 503 with a hint while the dashboard is not built', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'dash-empty-'));
    const s = await serve(empty);
    try {
      const res = await fetch(`${s.url}/settings/api-keys`);
      expect(res.status).toBe(503);
      expect(await res.text()).toContain('bootstrap.sh');
      expect((await fetch(`${s.url}/v1/x`)).status).toBe(200);
    } finally {
      await s.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
