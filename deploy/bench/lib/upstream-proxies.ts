/**
 * The processes of upstream-protocol.ts, one role each (ROLE):
 * - `upstream`: a fixed JSON answer, over HTTP/1.1 on PORT and over cleartext HTTP/2 (h2c) on H2_PORT.
 * - `node-h1`: a proxy that takes HTTP/1.1 and forwards it with node:http's client (keep-alive), as the proxy
 *   library does underneath, without the library.
 * - `node-h2`: a proxy that takes HTTP/1.1 and forwards each request as a stream of one node:http2 session.
 * - `undici-h1` / `undici-h2c`: the same proxy over an undici Pool (HTTP/1.1, keep-alive) or an undici Client
 *   that speaks h2c.
 * The proxy library alone (http-proxy-middleware over node:http, keep-alive) is lib/plain-proxy.ts. Every
 * proxy forwards the method, path, end-to-end headers and body, and answers the upstream's status, headers
 * and body; each answers /healthz itself.
 */
import { Agent, createServer, request, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { connect, createServer as createH2Server, type ClientHttp2Session, type IncomingHttpHeaders as H2Headers } from 'node:http2';
import { Client, Pool } from 'undici';

const role = process.env.ROLE;
const port = Number(process.env.PORT);
const host = process.env.HOST ?? '127.0.0.1';

/** Hop-by-hop headers, and those HTTP/2 forbids; a proxy does not forward them. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host', 'http2-settings']);

function endToEnd(headers: IncomingHttpHeaders | H2Headers | Record<string, string | string[] | undefined>): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !k.startsWith(':') && !HOP.has(k)) out[k] = v;
  return out;
}

function badGateway(res: ServerResponse): void {
  if (!res.headersSent) res.writeHead(502);
  res.end();
}

/** A GET answer the size of a model's description (~600 bytes), with the headers a service sends. */
const BODY = JSON.stringify({
  id: 'mdl_forecast',
  object: 'model',
  name: 'Forecast',
  type: 'forecast',
  status: 'ready',
  features: ['t', 'value', 'season', 'trend', 'holiday'],
  metrics: { mae: 1.234, rmse: 2.345, mape: 0.0456, r2: 0.9123 },
  aliases: { production: 1 },
  description: 'A seasonal forecast of a numeric column over time, trained on the source and kept per version. '.repeat(3),
  createdAt: '2026-11-28T00:00:00.000Z',
});
const ANSWER_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-request-id': 'req_0123456789abcdef' };

const proxied = (handle: (req: IncomingMessage, res: ServerResponse) => void) =>
  createServer((req, res) => {
    if (req.url === '/healthz') return void res.end('{"status":"ok"}');
    handle(req, res);
  });

let server: { close(cb?: () => void): unknown };
let release = async (): Promise<void> => undefined;
const target = new URL(process.env.TARGET ?? 'http://127.0.0.1:1');

if (role === 'upstream') {
  const h1 = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { ...ANSWER_HEADERS, 'content-length': Buffer.byteLength(BODY) });
      res.end(BODY);
    });
  });
  h1.keepAliveTimeout = 65_000;
  h1.listen(port, host);
  const h2 = createH2Server();
  h2.on('stream', (stream) => {
    stream.resume();
    stream.on('end', () => {
      stream.respond({ ':status': 200, ...ANSWER_HEADERS, 'content-length': Buffer.byteLength(BODY) });
      stream.end(BODY);
    });
  });
  h2.listen(Number(process.env.H2_PORT), host);
  server = { close: (cb) => h1.close(() => h2.close(cb)) };
} else if (role === 'node-h2') {
  let session: ClientHttp2Session | null = null;
  const open = (): ClientHttp2Session => {
    if (session && !session.closed && !session.destroyed) return session;
    const s = connect(target.origin);
    s.on('error', () => undefined);
    s.on('close', () => {
      if (session === s) session = null;
    });
    return (session = s);
  };
  server = proxied((req, res) => {
    const noBody = req.method === 'GET' || req.method === 'HEAD';
    const stream = open().request({ ...endToEnd(req.headers), ':method': req.method, ':path': req.url, ':authority': target.host }, { endStream: noBody });
    stream.on('response', (headers) => {
      res.writeHead(Number(headers[':status']), endToEnd(headers));
      stream.pipe(res);
    });
    stream.on('error', () => badGateway(res));
    if (!noBody) req.pipe(stream);
  });
  release = async () => void session?.close();
} else if (role === 'node-h1') {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  server = proxied((req, res) => {
    const out = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: endToEnd(req.headers), agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
      answer.pipe(res);
    });
    out.on('error', () => badGateway(res));
    req.pipe(out);
  });
  release = async () => agent.destroy();
} else if (role === 'undici-h1' || role === 'undici-h2c') {
  const dispatcher = role === 'undici-h1' ? new Pool(target.origin, { connections: 256 }) : new Client(target.origin, { allowH2: true, h2Options: { useH2c: true } });
  server = proxied((req, res) => {
    const noBody = req.method === 'GET' || req.method === 'HEAD';
    dispatcher
      .request({ method: req.method as 'GET', path: req.url ?? '/', headers: endToEnd(req.headers) as Record<string, string>, body: noBody ? null : req })
      .then(({ statusCode, headers, body }) => {
        res.writeHead(statusCode, endToEnd(headers));
        body.pipe(res);
      })
      .catch(() => badGateway(res));
  });
  release = () => dispatcher.close();
} else {
  throw new Error(`ROLE must be upstream, node-h1, node-h2, undici-h1 or undici-h2c, not ${role}`);
}
if (role !== 'upstream') (server as ReturnType<typeof createServer>).listen(port, host);

process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  void release();
});
