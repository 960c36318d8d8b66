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
    expect(toCsv([{ name: 'x' }], [['=HYPERLINK("http://evil")'], ['@SUM(1)'], ['+1'], [-3]])).toBe(
      'x\r\n"\'=HYPERLINK(""http://evil"")"\r\n\'@SUM(1)\r\n\'+1\r\n-3\r\n',
    );
  });
});
