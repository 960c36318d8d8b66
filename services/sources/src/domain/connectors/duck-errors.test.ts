import { duckReason, isCsvLineError, isDuckError } from './duck-errors.ts';

describe('duckReason', () => {
  it('keeps the reason, drops the advice and hides our paths', () => {
    const err = new Error(
      'Invalid Input Error: Error when sniffing file "/data/ds/acct_X/src_Y/staging.csv".\nIt was not possible to automatically detect the CSV parsing dialect\nThe search space used was:\nDelimiter Candidates: ","',
    );
    expect(isDuckError(err)).toBe(true);
    expect(duckReason(err, ['/data/ds'])).toBe('Error when sniffing file the uploaded file. It was not possible to automatically detect the CSV parsing dialect');
  });

  it('tells other errors apart and caps the length', () => {
    expect(isDuckError(new Error('ENOENT: no such file'))).toBe(false);
    expect(duckReason(new Error(`Conversion Error: ${'x'.repeat(900)}`)).length).toBe(500);
  });

  it("names the line of a CSV reader error and its reason, never the line's content", () => {
    const csvError = (reason: string) =>
      new Error(
        `Invalid Input Error: CSV Error on Line: 25001\nOriginal Line: 25000,"secret-value,1.5\n24999,"n, x",24999.5\n\n${reason}\n\nPossible fixes:\n* Disable the parser's strict mode\n\n  file = /data/ds/acct_X/staging.csv`,
      );
    const unterminated = csvError('Value with unterminated quote found.');
    expect(isCsvLineError(unterminated)).toBe(true);
    expect(duckReason(unterminated, ['/data/ds'])).toBe('line 25001: a quoted value is never closed');
    expect(duckReason(csvError('Expected Number of Columns: 3 Found: 4'))).toBe('line 25001: it has 4 fields where the header has 3');
    expect(duckReason(csvError('Invalid unicode (byte sequence mismatch) detected.'))).toBe('line 25001: it is not valid UTF-8 text');
    const unknown = duckReason(csvError('Something new went wrong.'));
    expect(unknown).toBe('line 25001 could not be read');
    expect(unknown).not.toContain('secret-value');
    expect(isCsvLineError(new Error('Conversion Error: Could not convert string "x" to INT64'))).toBe(false);
  });
});
