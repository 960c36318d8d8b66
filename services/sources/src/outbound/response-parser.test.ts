import { HttpProtocolError } from '../connectors/remote-errors.ts';
import { ResponseParser, type ResponseHead } from './response-parser.ts';

const LIMITS = { maxHeadBytes: 1024, maxLineBytes: 64, maxTrailerBytes: 128 };

/** Feeds `raw` in reads that end at `cuts`, each in its own reused buffer, as the socket does. */
function parse(raw: string, cuts: number[] = []): { heads: ResponseHead[]; body: string; complete: boolean } {
  const heads: ResponseHead[] = [];
  const parser = new ResponseParser(LIMITS, (h) => heads.push(h));
  const bytes = Buffer.from(raw, 'latin1');
  const buf = Buffer.alloc(bytes.length + 16, 0x7a); // stale bytes past each read, which must never be read
  let body = '';
  let at = 0;
  for (const end of [...cuts, bytes.length]) {
    bytes.copy(buf, 0, at, end);
    // Copied at once: the next read reuses the buffer.
    for (const slice of parser.execute(buf, end - at)) body += slice.toString('latin1');
    at = end;
  }
  return { heads, body, complete: parser.complete };
}

const CHUNKED =
  'HTTP/1.1 100 Continue\r\n\r\n' +
  'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/csv\r\n\r\n' +
  '5;name="v"\r\nhello\r\n1\r\n,\r\nA\r\n0123456789\r\n0\r\nX-Checksum: abc\r\n\r\n';

describe('ResponseParser', () => {
  it('reads the same response however the reads split it: at every byte, and one byte at a time', () => {
    const whole = parse(CHUNKED);
    expect(whole).toEqual({ heads: [{ status: 200, headers: expect.objectContaining({ 'content-type': 'text/csv' }) }], body: 'hello,0123456789', complete: true });
    for (let cut = 1; cut < CHUNKED.length; cut++) expect(parse(CHUNKED, [cut])).toEqual(whole);
    expect(
      parse(
        CHUNKED,
        Array.from({ length: CHUNKED.length - 1 }, (_, i) => i + 1),
      ),
    ).toEqual(whole);
    const counted = 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789TRAILING-GARBAGE';
    for (let cut = 1; cut < counted.length; cut++) expect(parse(counted, [cut])).toMatchObject({ body: '0123456789', complete: true });
  });

  it('accepts lines ending in a bare LF, as RFC 9112 lets a recipient', () => {
    expect(parse('HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n')).toMatchObject({ body: 'abc', complete: true });
  });

  it('frames by the end of the connection only when nothing else frames the body', () => {
    const parser = new ResponseParser(LIMITS, () => undefined);
    const raw = Buffer.from('HTTP/1.0 200 OK\r\n\r\nall of it');
    expect(parser.execute(raw, raw.length).map(String)).toEqual(['all of it']);
    expect(parser.complete).toBe(false);
    parser.end();
    expect(parser.complete).toBe(true);
    const counted = new ResponseParser(LIMITS, () => undefined);
    const short = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab');
    counted.execute(short, short.length);
    expect(() => counted.end()).toThrow('the connection closed before the whole response arrived');
  });

  it('has no body for 204, 304 and Content-Length: 0', () => {
    for (const raw of ['HTTP/1.1 204 No Content\r\n\r\n', 'HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n', 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n']) {
      expect(parse(raw)).toMatchObject({ body: '', complete: true });
    }
  });

  it.each([
    ['a negative chunk size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n', /invalid chunk size \("-5"\)/],
    ['a chunk size that is not hex', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', /invalid chunk size/],
    ['a chunk size too large to be real', `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${'f'.repeat(14)}\r\n`, /invalid chunk size/],
    ['a chunk longer than its size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n', /chunk longer than its size/],
    ['a chunk line past its cap', `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;${'x'.repeat(100)}`, /chunk size line is longer than 64 bytes/],
    ['trailers past their cap', `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n${'X-T: y\r\n'.repeat(30)}\r\n`, /trailer section is longer than 128 bytes/],
    ['a head past its cap', `HTTP/1.1 200 OK\r\n${'X-Pad: y\r\n'.repeat(200)}\r\n`, /headers are larger than 1 KiB/],
    ['another transfer coding', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n', /unsupported transfer encoding/],
    ['two different lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\n', /invalid Content-Length/],
    ['a signed length', 'HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\n', /invalid Content-Length/],
    ['a folded header', 'HTTP/1.1 200 OK\r\nX-A: 1\r\n  2\r\n\r\n', /invalid header line/],
    ['a space before the colon', 'HTTP/1.1 200 OK\r\nContent-Length : 3\r\n\r\nabc', /invalid header line/],
    ['a control character in a value', 'HTTP/1.1 200 OK\r\nX-A: a\u0001b\r\n\r\n', /invalid value for the header X-A/],
    ['not HTTP at all', 'SSH-2.0-OpenSSH_9.6\r\n\r\n', /not valid HTTP/],
    ['HTTP/2 preface', 'HTTP/2 200\r\n\r\n', /not valid HTTP/],
  ])('refuses %s', (_name, raw, message) => {
    expect(() => parse(raw)).toThrow(HttpProtocolError);
    expect(() => parse(raw)).toThrow(message);
  });

  it('allows a repeated Content-Length of one value, and keeps set-cookie as a list', () => {
    const r = parse('HTTP/1.1 200 OK\r\nContent-Length: 3\r\ncontent-length: 3\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-Many: 1\r\nX-Many: 2\r\n\r\nabc');
    expect(r.body).toBe('abc');
    expect(r.heads[0]!.headers).toMatchObject({ 'set-cookie': ['a=1', 'b=2'], 'x-many': '1, 2', 'content-length': '3, 3' });
  });
});
