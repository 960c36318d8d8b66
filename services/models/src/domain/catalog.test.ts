import { ModelCatalog } from './catalog.ts';
import { BUILTIN_MODELS, FORECAST_MODEL_ID, ANOMALY_MODEL_ID } from './builtin/index.ts';
import type { ModelRecord } from './model.ts';
import type { ModelRepository } from '../persistence/model.repository.ts';

const own = (id: string): ModelRecord => ({
  id,
  name: id,
  type: 'linear_regression',
  kind: 'trained',
  status: 'ready',
  version: 1,
  description: '',
  features: [],
  createdAt: new Date(),
});

/** An in-memory repository: newest first, ids below `before`, per account. */
function fakeRepository(rows: Record<string, ModelRecord[]>): ModelRepository {
  return {
    findById: async (accountId: string, id: string) => rows[accountId]?.find((m) => m.id === id) ?? null,
    list: async (accountId: string, opts: { limit: number; before?: string }) =>
      (rows[accountId] ?? [])
        .filter((m) => !opts.before || m.id < opts.before)
        .sort((a, b) => (a.id < b.id ? 1 : -1))
        .slice(0, opts.limit),
  } as unknown as ModelRepository;
}

describe('ModelCatalog', () => {
  const a1 = own('mdl_01JAAAAAAAAAAAAAAAAAAAAAA1');
  const a2 = own('mdl_01JAAAAAAAAAAAAAAAAAAAAAA2');
  const catalog = new ModelCatalog({ repository: fakeRepository({ acct_a: [a1, a2] }), builtins: BUILTIN_MODELS });

  it('lists built-ins first, then the account’s models, with one keyset cursor', async () => {
    expect((await catalog.list('acct_a', { limit: 10 })).map((m) => m.id)).toEqual([FORECAST_MODEL_ID, ANOMALY_MODEL_ID, a2.id, a1.id]);
    expect((await catalog.list('acct_a', { limit: 1 })).map((m) => m.id)).toEqual([FORECAST_MODEL_ID]);
    expect((await catalog.list('acct_a', { limit: 2, before: FORECAST_MODEL_ID })).map((m) => m.id)).toEqual([ANOMALY_MODEL_ID, a2.id]);
    expect((await catalog.list('acct_a', { limit: 2, before: a2.id })).map((m) => m.id)).toEqual([a1.id]);
    expect((await catalog.list('acct_b', { limit: 10 })).map((m) => m.id)).toEqual([FORECAST_MODEL_ID, ANOMALY_MODEL_ID]);
  });

  it('resolves built-ins for every account, own models only for their account', async () => {
    expect((await catalog.get('acct_b', FORECAST_MODEL_ID))?.name).toBe('forecast');
    expect(await catalog.get('acct_a', a1.id)).toBe(a1);
    expect(await catalog.get('acct_b', a1.id)).toBeNull();
  });

  it('has runtimes for built-ins at once, and asks the factory for own models', async () => {
    expect(catalog.runtimeOf('acct_a', BUILTIN_MODELS[0]!)).toBe(BUILTIN_MODELS[0]!.runtime);
    expect(await catalog.runtimeOf('acct_a', a1)).toBeNull(); // no factory given
    expect(catalog.evaluationOf(a1)).toBeNull();
    expect(catalog.evaluationOf({ ...a1, evaluation: { kind: 'holdout', mae: 1 } })).toEqual({ kind: 'holdout', mae: 1 });
    expect(catalog.evaluationOf(BUILTIN_MODELS[0]!)).toMatchObject({ kind: 'synthetic_backtest' });
    expect(catalog.isBuiltin(FORECAST_MODEL_ID)).toBe(true);
    expect(catalog.isBuiltin(a1.id)).toBe(false);
  });
});
