import { newId } from '@dap/contracts';
import { DomainError } from '@dap/errors';
import { evenSample } from './models.service.ts';
import { specOf, ulidTime } from './training.service.ts';

describe('training helpers', () => {
  it('reads the creation time out of an id', () => {
    const before = Date.now();
    const t = ulidTime(newId('src'));
    expect(t).toBeGreaterThanOrEqual(before - 1);
    expect(t).toBeLessThanOrEqual(Date.now());
    // The first ten characters are the time in Crockford base 32: 0, 1, H (17), then zeros.
    expect(ulidTime('src_01H000000000000000000000AA')).toBe(1 * 32 ** 8 + 17 * 32 ** 7);
    expect(ulidTime('src_nope')).toBeNull();
  });

  it('samples a batch evenly, all of a small one', () => {
    expect(evenSample([1, 2, 3], 5)).toEqual([1, 2, 3]);
    expect(
      evenSample(
        Array.from({ length: 100 }, (_, i) => i),
        4,
      ),
    ).toEqual([0, 25, 50, 75]);
  });

  it('maps source columns to feature kinds and names every bad field', () => {
    const schema = [
      { name: 'n', type: 'number' as const },
      { name: 'i', type: 'integer' as const },
      { name: 's', type: 'string' as const },
      { name: 'b', type: 'boolean' as const },
      { name: 't', type: 'timestamp' as const },
    ];
    const hp = { seed: 1, testFraction: 0.2, maxCategories: 20, learningRate: 0.5, maxIterations: 10 };
    const spec = specOf({ type: 'logistic_regression', name: 'x', sourceId: newId('src'), target: 'b', features: ['n', 'i', 's'], hyperparameters: hp }, schema);
    expect(spec.target).toEqual({ name: 'b', kind: 'boolean' });
    expect(spec.features).toEqual([
      { name: 'n', kind: 'numeric' },
      { name: 'i', kind: 'numeric' },
      { name: 's', kind: 'categorical' },
    ]);
    const err = (() => {
      try {
        specOf({ type: 'logistic_regression', name: 'x', sourceId: newId('src'), target: 'n', features: ['t', 'zz', 'n'], hyperparameters: hp }, schema);
      } catch (e) {
        return e;
      }
    })() as DomainError;
    expect(err).toBeInstanceOf(DomainError);
    expect(err.errors?.map((e) => e.path)).toEqual(['features.0', 'features.1', 'features.2', 'target']);
  });
});
