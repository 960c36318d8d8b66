import { duckReason, isDuckError } from './duck-errors.ts';

describe('duckReason', () => {
  it('keeps the reason, drops the advice and hides our paths', () => {
    const err = new Error(
      'Invalid Input Error: Error when sniffing file "/data/ds/acct_X/src_Y/staging.csv".\nIt was not possible to automatically detect the CSV parsing dialect\nThe search space used was:\nDelimiter Candidates: ","',
    );
    expect(isDuckError(err)).toBe(true);
    expect(duckReason(err, ['/data/ds'])).toBe(
      'Error when sniffing file the uploaded file. It was not possible to automatically detect the CSV parsing dialect',
    );
  });

  it('tells other errors apart and caps the length', () => {
    expect(isDuckError(new Error('ENOENT: no such file'))).toBe(false);
    expect(duckReason(new Error(`Conversion Error: ${'x'.repeat(900)}`)).length).toBe(500);
  });
});
