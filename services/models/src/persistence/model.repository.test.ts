import { categoricalProfile, numericProfile } from '../domain/training/drift.ts';
import { recordOf, type ModelDoc } from './model.repository.ts';

/** A model trained before features carried their categories and range, as stored then. */
function legacyDoc(maxCategories: number): ModelDoc {
  const plans = [...Array<string>(5).fill('free'), ...Array<string>(3).fill('pro'), 'team'];
  return {
    _id: 'mdl_01JAAAAAAAAAAAAAAAAAAAAAAA',
    accountId: 'acct_01JAAAAAAAAAAAAAAAAAAAAAAA',
    name: 'old',
    type: 'linear_regression',
    kind: 'trained',
    status: 'ready',
    version: 1,
    description: '',
    features: [
      { name: 'plan', type: 'string', description: 'string; a category' },
      { name: 'seats', type: 'integer', description: 'integer' },
    ],
    profile: [categoricalProfile('plan', plans), numericProfile('seats', 'numeric', [1, 2, 3, 10])],
    training: {
      sourceId: 'src_1',
      target: 'y',
      features: ['plan', 'seats'],
      hyperparameters: { maxCategories },
      rows: null,
      startedAt: new Date(0),
      finishedAt: null,
      durationMs: null,
    },
    createdAt: new Date(0),
    updatedAt: new Date(0),
  } as ModelDoc;
}

describe('a model stored before features carried their known values', () => {
  it('reads its categories (the encoder’s: the first maxCategories by frequency) and range from the training profile', () => {
    const [plan, seats] = recordOf(legacyDoc(20)).features;
    expect(plan).toEqual({ name: 'plan', type: 'string', description: 'string; a category', categories: ['free', 'pro', 'team'] });
    expect(seats).toEqual({ name: 'seats', type: 'integer', description: 'integer', range: { min: 1, max: 10, mean: 4 } });
    expect(recordOf(legacyDoc(2)).features[0]!.categories).toEqual(['free', 'pro']);
  });

  it('leaves features that carry their own untouched', () => {
    const doc = legacyDoc(20);
    doc.features = [
      { name: 'plan', type: 'string', description: 'd', categories: ['pro'] },
      { name: 'seats', type: 'integer', description: 'd', range: { min: 0, max: 1, mean: 0.5 } },
    ];
    expect(recordOf(doc).features).toBe(doc.features);
  });
});
