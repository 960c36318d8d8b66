import { buildQuery, builderStateFromQuery, type BuilderState } from '../dashboard/src/explore-state.ts';

const schema = [
  { name: 'country', type: 'string' as const },
  { name: 'amount', type: 'number' as const },
  { name: 'at', type: 'timestamp' as const },
];

describe('builderStateFromQuery (opening an insight in Explore)', () => {
  it('gives back the builder state a query was built from', () => {
    const st: BuilderState = {
      sourceId: 'src_01JD2W0A4B6C8D0E2F4G6H8J0K',
      measures: [
        { op: 'count', field: '', as: '' },
        { op: 'sum', field: 'amount', as: 'revenue' },
      ],
      dimensions: ['country'],
      time: { field: 'at', granularity: 'week', from: '2026-01-01', to: '2026-03-01', timezone: 'Europe/Berlin', compareTo: 'previousPeriod' },
      filters: [
        { field: 'country', op: 'in', value: 'FR, DE' },
        { field: 'amount', op: 'gt', value: '10' },
        { field: 'country', op: 'isNotNull', value: '' },
      ],
      order: { field: 'revenue', direction: 'desc' },
      limit: 250,
    };
    const query = buildQuery(st, schema) as unknown as Record<string, unknown>;
    expect(builderStateFromQuery(query)).toEqual(st);
    // As the API stores it (defaults filled in), it still opens the same.
    expect(builderStateFromQuery({ ...query, offset: 0, timeDimension: { ...(query.timeDimension as object), weekStartsOn: 1 } })).toEqual(st);
  });

  it('is null for what is not a query', () => {
    expect(builderStateFromQuery({})).toBeNull();
    expect(builderStateFromQuery({ sourceId: 'src_x', measures: [] })).toBeNull();
  });
});
