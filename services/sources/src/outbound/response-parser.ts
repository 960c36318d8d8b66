import type { IncomingHttpHeaders } from 'node:http';
import { HttpProtocolError } from '../connectors/remote-errors.ts';

/**
 * A strict HTTP/1.1 response parser for one GET (RFC 9112), fed the socket's reads in place: it hands the
 * body back as views of the buffer it was given, so nothing is copied.
 *
 * Written here rather than taken from npm: the one standalone JavaScript parser, http-parser-js, framed
 * bodies leniently in ways that lose data or never stop (a chunk size of `-5` looped forever, `zz` ended
 * the body silently, a chunk line or trailers without end grew without bound, an interim response's body
 * became part of the real one), and Node's own parser (llhttp) is not exposed. This one takes what RFC 9112
 * allows and refuses the rest:
 * - interim responses (1xx but 101) are skipped and carry no body;
 * - a body is framed by `Transfer-Encoding: chunked` (any other transfer coding is refused), else by a
 *   `Content-Length` of digits (repeated values must agree), else by the end of the connection;
 * - chunk sizes are hex digits, optionally followed by extensions, which are ignored; every line is capped,
 *   and so are the head and the trailers; lines end with CRLF or, as RFC 9112 lets a recipient accept, LF;
 * - nothing after the end of the response is read.
 */
export interface ParserLimits {
  /** Status line and headers of one response. */
  maxHeadBytes: number;
  /** A chunk-size line, extensions included. */
  maxLineBytes: number;
  /** All trailer fields together. */
  maxTrailerBytes: number;
}

export interface ResponseHead {
  status: number;
  headers: IncomingHttpHeaders;
}

type State =
  | { kind: 'head' }
  | { kind: 'length'; remaining: number }
  | { kind: 'chunk-size' }
  | { kind: 'chunk-data'; remaining: number }
  | { kind: 'chunk-end' }
  | { kind: 'trailers' }
  | { kind: 'close' }
  | { kind: 'done' };

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Field values: visible ASCII, spaces, tabs and obs-text; never CR, LF or other controls. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const STATUS_LINE = /^HTTP\/1\.[01] ([1-9]\d\d)(?: [\t\x20-\x7e\x80-\xff]*)?$/;
const CHUNK_SIZE = /^([0-9A-Fa-f]{1,13})[ \t]*(?:;[\t\x20-\x7e\x80-\xff]*)?$/;

export class ResponseParser {
  private readonly limits: ParserLimits;
  private readonly onHead: (head: ResponseHead) => void;
  private state: State = { kind: 'head' };
  /** The head, a chunk-size line or a trailer line as read so far (latin1: one char per byte). */
  private text = '';
  private trailerBytes = 0;

  constructor(limits: ParserLimits, onHead: (head: ResponseHead) => void) {
    this.limits = limits;
    this.onHead = onHead;
  }

  /** The whole response has been read. */
  get complete(): boolean {
    return this.state.kind === 'done';
  }

  /**
   * Parses `buf[0, n)` and answers the body bytes in it, as views of `buf`, in order. Calls `onHead` for the
   * final response's head (an error it throws ends the parse). Throws HttpProtocolError on a response that
   * breaks the protocol. Bytes after the end of the response are ignored.
   */
  execute(buf: Buffer<ArrayBuffer>, n: number): Buffer<ArrayBuffer>[] {
    const body: Buffer<ArrayBuffer>[] = [];
    let pos = 0;
    while (pos < n) {
      const s = this.state;
      switch (s.kind) {
        case 'head':
          pos = this.readHead(buf, pos, n);
          break;
        case 'length':
        case 'chunk-data': {
          const take = Math.min(s.remaining, n - pos);
          body.push(buf.subarray(pos, pos + take));
          pos += take;
          s.remaining -= take;
          if (s.remaining === 0) this.state = s.kind === 'length' ? { kind: 'done' } : { kind: 'chunk-end' };
          break;
        }
        case 'chunk-end':
          pos = this.readChunkEnd(buf, pos, n);
          break;
        case 'chunk-size':
          pos = this.readChunkSize(buf, pos, n);
          break;
        case 'trailers':
          pos = this.readTrailers(buf, pos, n);
          break;
        case 'close':
          body.push(buf.subarray(pos, n));
          pos = n;
          break;
        case 'done':
          return body;
      }
    }
    return body;
  }

  /** The connection ended: that completes a body framed by it; anything else was cut short. */
  end(): void {
    if (this.state.kind === 'close') this.state = { kind: 'done' };
    if (this.state.kind !== 'done') throw new HttpProtocolError('the connection closed before the whole response arrived');
  }

  /**
   * Reads up to the end of a line (one that may span reads) into `text`; answers where reading stopped and
   * the line once it ended. Lines end with CRLF, or a bare LF, which RFC 9112 lets a recipient accept.
   * `used` bytes of the same cap went to earlier lines.
   */
  private readLine(buf: Buffer, pos: number, n: number, cap: number, what: string, used = 0): { pos: number; line: string | null } {
    const lf = buf.subarray(pos, n).indexOf(10);
    const stop = lf === -1 ? n : pos + lf + 1;
    if (used + this.text.length + (stop - pos) > cap) throw new HttpProtocolError(`the server's ${what} is longer than ${cap} bytes`);
    this.text += buf.toString('latin1', pos, stop);
    if (lf === -1) return { pos: stop, line: null };
    const line = this.text.slice(0, this.text.endsWith('\r\n') ? -2 : -1);
    this.text = '';
    return { pos: stop, line };
  }

  /** The head ends at the first empty line, which may straddle two reads; at most maxHeadBytes of it. */
  private readHead(buf: Buffer, pos: number, n: number): number {
    const before = this.text.length;
    const stop = Math.min(n, pos + this.limits.maxHeadBytes + 4 - before);
    this.text += buf.toString('latin1', pos, stop);
    const blank = /\r?\n\r?\n/g;
    blank.lastIndex = Math.max(0, before - 3);
    const end = blank.exec(this.text);
    if (!end) {
      if (this.text.length > this.limits.maxHeadBytes) throw new HttpProtocolError(`the server's response headers are larger than ${this.limits.maxHeadBytes / 1024} KiB`);
      return stop;
    }
    const head = this.text.slice(0, end.index);
    this.text = '';
    this.startBody(head);
    return pos + (end.index + end[0].length - before);
  }

  private startBody(head: string): void {
    const lines = head.split(/\r?\n/);
    const status = STATUS_LINE.exec(lines[0] ?? '');
    if (!status) throw new HttpProtocolError(`the server's response is not valid HTTP (status line ${JSON.stringify((lines[0] ?? '').slice(0, 40))})`);
    const code = Number(status[1]);
    const headers = parseFields(lines.slice(1));
    // An interim response (100 Continue, 103 Early Hints) has no body; the real one follows.
    if (code < 200 && code !== 101) return;
    const te = headers['transfer-encoding'];
    const cl = headers['content-length'];
    let state: State;
    if (code === 101 || code === 204 || code === 304) state = { kind: 'done' };
    else if (te !== undefined) {
      if (te.trim().toLowerCase() !== 'chunked') throw new HttpProtocolError(`the server used an unsupported transfer encoding (${te.slice(0, 40)})`);
      state = { kind: 'chunk-size' };
    } else if (cl !== undefined) {
      const values = new Set(cl.split(',').map((v) => v.trim()));
      const [only] = values;
      if (values.size !== 1 || !/^\d{1,15}$/.test(only!)) throw new HttpProtocolError('the server sent an invalid Content-Length');
      const length = Number(only);
      state = length === 0 ? { kind: 'done' } : { kind: 'length', remaining: length };
    } else state = { kind: 'close' };
    this.state = state;
    this.onHead({ status: code, headers });
  }

  private readChunkSize(buf: Buffer, pos: number, n: number): number {
    const { pos: next, line } = this.readLine(buf, pos, n, this.limits.maxLineBytes, 'chunk size line');
    if (line === null) return next;
    const m = CHUNK_SIZE.exec(line);
    if (!m) throw new HttpProtocolError(`the server sent an invalid chunk size (${JSON.stringify(line.slice(0, 20))})`);
    const size = parseInt(m[1]!, 16);
    this.state = size === 0 ? { kind: 'trailers' } : { kind: 'chunk-data', remaining: size };
    return next;
  }

  /** The line end after a chunk's data: CRLF (or a bare LF), whose bytes may come in different reads. */
  private readChunkEnd(buf: Buffer, pos: number, n: number): number {
    if (pos < n && this.text === '' && buf[pos] === 13) {
      this.text = '\r';
      pos++;
    }
    if (pos >= n) return pos;
    if (buf[pos] !== 10) throw new HttpProtocolError('the server sent a chunk longer than its size');
    this.text = '';
    this.state = { kind: 'chunk-size' };
    return pos + 1;
  }

  /** Trailer fields after the last chunk, up to an empty line: checked, counted against the limit, dropped. */
  private readTrailers(buf: Buffer, pos: number, n: number): number {
    const { pos: next, line } = this.readLine(buf, pos, n, this.limits.maxTrailerBytes, 'trailer section', this.trailerBytes);
    if (line === null) return next;
    if (line === '') this.state = { kind: 'done' };
    else {
      parseFields([line]);
      this.trailerBytes += line.length + 2;
    }
    return next;
  }
}

/** Header fields as Node gives them: names in lower case, repeated ones joined (set-cookie as a list). */
function parseFields(lines: string[]): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = Object.create(null) as IncomingHttpHeaders;
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    // Folded lines (obs-fold) and names with spaces before the colon are refused, as RFC 9112 asks.
    if (!TOKEN.test(name)) throw new HttpProtocolError(`the server sent an invalid header line (${JSON.stringify(line.slice(0, 40))})`);
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    if (!FIELD_VALUE.test(value)) throw new HttpProtocolError(`the server sent an invalid value for the header ${name.slice(0, 40)}`);
    const key = name.toLowerCase();
    const prev = out[key];
    if (key === 'set-cookie') out['set-cookie'] = [...((prev as string[] | undefined) ?? []), value];
    else out[key] = prev === undefined ? value : `${String(prev)}, ${value}`;
  }
  return out;
}
