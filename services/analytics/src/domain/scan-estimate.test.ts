import type { ParquetLayout } from '../persistence/query.runner.ts';
import { estimateScan } from './scan-estimate.ts';

const group = (id: number, rows: number, min: string | null, max: string | null): ParquetLayout[number] => ({
  id,
  rows,
  columns: { ts: { bytes: 100, min, max }, v: { bytes: 40, min: '0', max: '9' }, s: { bytes: 7, min: null, max: null } },
});
// Three row groups: January, February, and one without statistics.
const LAYOUT: ParquetLayout = [group(0, 1000, '2024-01-01 00:00:00', '2024-01-31 23:59:59'), group(1, 900, '2024-02-01 00:00:00', '2024-02-29 23:00:00'), group(2, 50, null, null)];
const at = (iso: string) => Date.parse(iso);

describe('estimateScan', () => {
  it('reads every row group, and only the bytes of the columns used', () => {
    expect(estimateScan(LAYOUT, { columns: ['v'], timeField: null, ranges: null })).toEqual({ rowsRead: 1950, bytesRead: 120, rowGroups: 3, rowGroupsTotal: 3 });
    expect(estimateScan(LAYOUT, { columns: [], timeField: null, ranges: null }).bytesRead).toBe(0);
  });

  it('skips the row groups a time range rules out by their min/max, but never one without statistics', () => {
    const feb = estimateScan(LAYOUT, { columns: ['ts', 'v'], timeField: 'ts', ranges: [{ from: at('2024-02-10T00:00:00Z'), to: at('2024-03-01T00:00:00Z') }] });
    expect(feb).toEqual({ rowsRead: 950, bytesRead: 280, rowGroups: 2, rowGroupsTotal: 3 });
    // `to` is exclusive: a range ending at February's first instant does not read February.
    const jan = estimateScan(LAYOUT, { columns: ['v'], timeField: 'ts', ranges: [{ from: null, to: at('2024-02-01T00:00:00Z') }] });
    expect(jan).toEqual({ rowsRead: 1050, bytesRead: 80, rowGroups: 2, rowGroupsTotal: 3 });
    // Two ranges (a comparison) read both months.
    const both = estimateScan(LAYOUT, {
      columns: ['v'],
      timeField: 'ts',
      ranges: [
        { from: at('2024-01-05T00:00:00Z'), to: at('2024-01-06T00:00:00Z') },
        { from: at('2024-02-05T00:00:00Z'), to: at('2024-02-06T00:00:00Z') },
      ],
    });
    expect(both.rowGroups).toBe(3);
  });

  it('reads time-zoned statistics (a bare hour offset) as instants', () => {
    const tz: ParquetLayout = [group(0, 10, '2024-01-01 00:00:00+00', '2024-01-31 00:00:00+00')];
    expect(estimateScan(tz, { columns: ['v'], timeField: 'ts', ranges: [{ from: at('2024-02-01T00:00:00Z'), to: null }] }).rowGroups).toBe(0);
    expect(estimateScan(tz, { columns: ['v'], timeField: 'ts', ranges: [{ from: at('2024-01-30T00:00:00Z'), to: null }] }).rowGroups).toBe(1);
  });
});
