import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { stackEnv } from '@dap/testing';
import { stackAge, warmMongo } from './lib/conditions.ts';

describe('bench run conditions on the test stack', () => {
  it('warms MongoDB until two rounds agree, and leaves no database behind', async () => {
    const { MONGO_URL } = stackEnv();
    const w = await warmMongo(MONGO_URL, { maxMs: 30_000, batch: 200 });
    expect(w.rounds).toBeGreaterThanOrEqual(w.stable ? 3 : 1);
    expect(w.roundMs).toHaveLength(w.rounds);
    expect(w.roundMs.every((ms) => ms > 0)).toBe(true);
    const client = await MongoClient.connect(MONGO_URL, { directConnection: true });
    try {
      const { databases } = await client.db().admin().listDatabases();
      expect(databases.map((d) => d.name)).not.toContain(`bench_warmup_${process.pid}`);
    } finally {
      await client.close();
    }
  }, 60_000);

  it("tells how long a profile's processes have been up", () => {
    const root = mkdtempSync(join(tmpdir(), 'stack-age-'));
    try {
      mkdirSync(join(root, '.local/p/pids'), { recursive: true });
      writeFileSync(join(root, '.local/p/pids/self.pid'), String(process.pid));
      writeFileSync(join(root, '.local/p/pids/gone.pid'), '999999999');
      const age = stackAge(root, 'p', 1e9);
      expect(Object.keys(age!.componentsUpSec)).toEqual(['self']);
      expect(age!.componentsUpSec.self).toBeGreaterThanOrEqual(0);
      expect(age!.componentsUpSec.self).toBeLessThan(process.uptime() + 5);
      expect(age!.fresh).toBe(true);
      expect(stackAge(root, 'p', 0)!.fresh).toBe(false);
      expect(stackAge(root, 'none')).toBeNull();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
