import { columns } from '@dap/testing';
import { ndjsonEncoder, uniqueNames } from './row-encoding.ts';

describe('ndjsonEncoder', () => {
  it('writes typed JSON lines from database text values', () => {
    const encode = ndjsonEncoder(columns({ id: 'BIGINT', amount: 'DOUBLE', paid: 'BOOLEAN', on: 'DATE', at: 'TIMESTAMP', 'note "x"': 'VARCHAR' }));
    const line = encode(['9007199254740993', '12.50', 't', '2024-01-02', '2024-01-02 03:04:05.123456', 'a\nb"c']);
    expect(line).toBe('{"id":9007199254740993,"amount":12.50,"paid":true,"on":"2024-01-02","at":"2024-01-02 03:04:05.123456","note \\"x\\"":"a\\nb\\"c"}\n');
    expect(JSON.parse(line)['note "x"']).toBe('a\nb"c');
  });

  it('turns values JSON cannot hold into null, and keeps binary and objects as text', () => {
    const encode = ndjsonEncoder(columns({ n: 'DOUBLE', d: 'DATE', t: 'TIMESTAMP', b: 'BOOLEAN', bits: 'BIGINT', blob: 'VARCHAR', geo: 'VARCHAR' }));
    expect(JSON.parse(encode(['NaN', 'infinity', '0000-00-00 00:00:00', 'maybe', Buffer.from([1, 0]), Buffer.from('xyz'), { x: 1 }]))).toEqual({
      n: null,
      d: null,
      t: null,
      b: null,
      bits: 256,
      blob: 'eHl6',
      geo: '{"x":1}',
    });
    expect(encode([null, undefined, '0044-03-15 BC', 'f', null, null, null])).toBe('{"n":null,"d":null,"t":null,"b":false,"bits":null,"blob":null,"geo":null}\n');
  });
});

describe('uniqueNames', () => {
  it('suffixes duplicates, case-insensitively, and names empty columns', () => {
    expect(uniqueNames(['id', 'ID', 'id', '', 'id_2'])).toEqual(['id', 'ID_2', 'id_3', 'column', 'id_2_2']);
  });
});
