import { toCsv } from './csv.ts';

describe('toCsv', () => {
  it('writes a header and RFC 4180 rows with CRLF, quoting where needed', () => {
    const csv = toCsv(
      [{ name: 'country' }, { name: 'n' }, { name: 'ok' }, { name: 'note, with comma' }],
      [
        ['DE', 3, true, 'plain'],
        [null, -1.5, false, 'say "hi"\nbye'],
      ],
    );
    expect(csv).toBe('country,n,ok,"note, with comma"\r\nDE,3,true,plain\r\n,-1.5,false,"say ""hi""\nbye"\r\n');
  });

  it('neutralises cells a spreadsheet would run as formulas', () => {
    expect(toCsv([{ name: 'x' }], [['=HYPERLINK("http://evil")'], ['@SUM(1)'], ['+1'], [-3]])).toBe('x\r\n"\'=HYPERLINK(""http://evil"")"\r\n\'@SUM(1)\r\n\'+1\r\n-3\r\n');
  });

  it('writes integers past 2^53 (exact digits) as numbers in integer columns only; text that looks like one stays neutralised', () => {
    expect(
      toCsv(
        [
          { name: 'id', type: 'integer' },
          { name: 'code', type: 'string' },
        ],
        [
          ['-9223372036854775807', '-12'],
          ['1790000000000000001', '=1'],
        ],
      ),
    ).toBe("id,code\r\n-9223372036854775807,'-12\r\n1790000000000000001,'=1\r\n");
    // Decimals a double cannot hold come as exact digits too: numbers in number columns, not formulas.
    expect(
      toCsv(
        [
          { name: 'total', type: 'number' },
          { name: 'code', type: 'string' },
        ],
        [['-123456789012345678.91', '-1.5']],
      ),
    ).toBe("total,code\r\n-123456789012345678.91,'-1.5\r\n");
    expect(toCsv([{ name: 'total', type: 'number' }], [['-1.5e3+1']])).toBe("total\r\n'-1.5e3+1\r\n");
    // A text cell in an integer column that is not digits is still neutralised.
    expect(toCsv([{ name: 'id', type: 'integer' }], [['=1+1']])).toBe("id\r\n'=1+1\r\n");
  });
});
