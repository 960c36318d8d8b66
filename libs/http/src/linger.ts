import type { IncomingMessage, ServerResponse } from 'node:http';

/** How long the rest of a refused body is read and dropped before the connection is closed. */
export const EARLY_ANSWER_LINGER_MS = 2_000;

/**
 * For a route that may answer before its body has all arrived (a refused or oversize upload). Closing at once
 * with the body unread makes the kernel send a reset, which can destroy the answer before the client (or the
 * proxy in front of us) reads it; reading a body of gigabytes to keep the connection alive wastes it. So the
 * rest is read and dropped for a moment (as nginx's lingering close does), then the connection is closed.
 */
export function lingerAfterEarlyAnswer(req: IncomingMessage, res: ServerResponse, graceMs = EARLY_ANSWER_LINGER_MS): void {
  // A client that sent `Connection: close` (the gateway's proxy does for every chunked body) would have the
  // connection closed the moment the answer is written, and the rest of its body would meet a reset before it
  // reads the answer. So the server keeps it open, and it is closed here once the body is drained.
  const wantsClose = !res.shouldKeepAlive;
  res.shouldKeepAlive = true;
  res.once('finish', () => {
    const done = () => {
      if (wantsClose) req.socket.end();
    };
    if (req.complete) return done();
    req.resume();
    const timer = setTimeout(() => req.socket.destroy(), graceMs);
    timer.unref();
    req.once('end', () => {
      clearTimeout(timer);
      done();
    });
    req.socket.once('close', () => clearTimeout(timer));
  });
}
