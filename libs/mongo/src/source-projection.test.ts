import { makeEvent, newId } from '@dap/contracts';
import { normaliseSchema, sourceChangeOf } from './source-projection.ts';

const accountId = newId('acct');
const id = newId('src');
const fields = { accountId, subject: id };

describe('sourceChangeOf', () => {
  it('maps each source event to its change, with the source id', () => {
    expect(sourceChangeOf(makeEvent('source.created', { ...fields, data: { id, name: 'orders', type: 'csv' } }))).toEqual({
      sourceId: id,
      change: { name: 'orders', type: 'csv', status: 'pending', error: null },
    });
    const ready = makeEvent('source.ready', {
      ...fields,
      data: {
        id,
        name: 'orders',
        type: 'csv',
        rowCount: 12,
        schema: [
          { name: 'n', type: 'integer' },
          { name: 'at', type: 'timestamp' },
        ],
      },
    });
    expect(sourceChangeOf(ready)).toEqual({
      sourceId: id,
      change: {
        name: 'orders',
        type: 'csv',
        status: 'ready',
        error: null,
        rowCount: 12,
        schema: [
          { name: 'n', type: 'integer' },
          { name: 'at', type: 'timestamp' },
        ],
      },
    });
    // A failure keeps the type, schema and row count it had.
    expect(sourceChangeOf(makeEvent('source.failed', { ...fields, data: { id, name: 'orders', error: 'bad csv' } }))).toEqual({
      sourceId: id,
      change: { name: 'orders', status: 'failed', error: 'bad csv' },
    });
    expect(sourceChangeOf(makeEvent('source.deleted', { ...fields, data: { id } }))).toEqual({ sourceId: id, change: { deleted: true } });
  });

  it('ignores every other event', () => {
    expect(sourceChangeOf(makeEvent('model.ready', { ...fields, data: { id: newId('mdl'), name: 'm', type: 'kmeans' } }))).toBeNull();
    expect(sourceChangeOf(makeEvent('report.failed', { ...fields, data: { id: newId('rpt'), sourceId: id, error: 'x' } }))).toBeNull();
  });
});

describe('normaliseSchema', () => {
  it('keeps known column types and reads unknown ones (from a newer producer) as strings', () => {
    expect(
      normaliseSchema([
        { name: 'a', type: 'number' },
        { name: 'b', type: 'boolean' },
        { name: 'c', type: 'decimal128' },
        { name: 'd', type: 'toString' },
      ]),
    ).toEqual([
      { name: 'a', type: 'number' },
      { name: 'b', type: 'boolean' },
      { name: 'c', type: 'string' },
      { name: 'd', type: 'string' },
    ]);
  });
});
