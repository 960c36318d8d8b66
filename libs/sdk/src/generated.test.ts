import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const script = fileURLToPath(new URL('../scripts/generate-client.ts', import.meta.url));
const generated = fileURLToPath(new URL('./generated/openapi.d.ts', import.meta.url));

/** The generator as `npm run generate:client` runs it (Node strips the types itself). */
const generate = (...args: string[]) => run(process.execPath, ['--no-warnings', script, ...args], { maxBuffer: 64 * 1024 * 1024 });

describe('the generated client types', () => {
  it('are what the generator makes from the OpenAPI document now (bootstrap, or npm run generate:client, makes them again)', async () => {
    const { stdout } = await generate('--stdout');
    expect(stdout).toContain('export interface paths');
    expect(stdout).toContain('"/sources/{id}"');
    // A diff names the first line that differs, unlike a bare boolean.
    expect(readFileSync(generated, 'utf8')).toBe(stdout);
  }, 180_000);

  it('--check refuses a stale file and passes the current one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dap-generated-'));
    const stale = join(dir, 'openapi.d.ts');
    try {
      await expect(generate('--check')).resolves.toBeDefined();
      writeFileSync(stale, readFileSync(generated, 'utf8').replace('"/sources/{id}"', '"/sources/{sourceId}"'));
      await expect(generate(`--check=${stale}`)).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('is stale') });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
