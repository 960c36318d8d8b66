import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatasetStore } from '@dap/datasets';

/**
 * A dataset store in a fresh temporary directory for the tests of one describe block (or file): opened in
 * beforeAll, closed and removed in afterAll. Read `.store` inside the tests.
 */
export function useTempStore(name: string): { readonly store: DatasetStore } {
  let root = '';
  let store: DatasetStore | undefined;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), `dap-${name}-test-`));
    store = await DatasetStore.open(root);
  });
  afterAll(async () => {
    store?.duck.close();
    if (root) await rm(root, { recursive: true, force: true });
  });
  return {
    get store() {
      if (!store) throw new Error('the temporary store is open inside the tests only');
      return store;
    },
  };
}
