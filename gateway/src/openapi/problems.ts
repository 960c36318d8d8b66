import { ERROR_CODE_GROUPS, ERROR_CODES, type ErrorCode } from '@dap/errors';
import { PROBLEM_TYPE_BASE, PROBLEM_TYPES, problemTypeOf, statusOf, type ProblemTypeName } from '@dap/http';

/** What each problem `type` means and what the caller does about it; typed so every problem type has a page. */
export const PROBLEM_GUIDE: Record<ProblemTypeName, { meaning: string; action: string }> = {
  invalid: {
    meaning:
      'The request was well-formed JSON, but one or more fields, query parameters or path identifiers failed validation, or do not fit the resource (a query naming a column the source does not have, prediction inputs the model does not take). The errors[] member names each invalid field by its path with a message (at most 100 of them; errorCount says how many there were when more were found).',
    action: 'Fix each field errors[] names and send the request again. The OpenAPI document at /v1/openapi.json gives the schema of every body and parameter.',
  },
  malformed_json: {
    meaning: 'The request body could not be parsed as JSON, nests too deeply, uses a field name starting with $ or named __proto__, or holds a string that is not valid Unicode.',
    action: 'Send a valid UTF-8 JSON document with Content-Type: application/json.',
  },
  unsupported_content_type: {
    meaning: 'The request carried a body in a media type the operation does not take.',
    action: 'Send JSON bodies with Content-Type: application/json.',
  },
  bad_request: {
    meaning:
      'The request is malformed in a way other than a field validation: for example a query parameter the operation does not list, one given twice, or an invalid Idempotency-Key header.',
    action: 'Read detail, correct the request and send it again. Retrying it unchanged gives the same answer.',
  },
  unauthenticated: {
    meaning: 'No valid credentials came with the request: the Authorization header is missing, the API key is unknown, revoked or expired, or the dashboard session has ended.',
    action: 'Send Authorization: Bearer <API_KEY> with an active key from Settings > API Keys in the dashboard, or sign in again.',
  },
  forbidden: {
    meaning:
      'The credentials are valid but do not allow this operation: the API key lacks the scope the operation needs, the operation needs a dashboard session, or a dashboard request did not send its x-csrf-token.',
    action: 'Use a key created with the scope the operation lists (x-required-scope in the OpenAPI document), or create a new key with it.',
  },
  not_found: {
    meaning: 'The resource does not exist, was deleted, or belongs to another account (the API does not tell these apart, so identifiers of other accounts stay private).',
    action: 'Check the identifier; list the collection to find the resources of your account.',
  },
  method_not_allowed: {
    meaning: 'The path exists but does not answer this HTTP method.',
    action: 'Use one of the methods the Allow header lists.',
  },
  conflict: {
    meaning: 'The request conflicts with the current state of the resource (for example the model is not ready yet), or a request with the same Idempotency-Key is still running.',
    action: 'Read detail. When the response has Retry-After, wait that many seconds and retry; otherwise wait for the resource to reach the state the operation needs.',
  },
  too_large: {
    meaning: 'The request body is larger than the limit the API accepts: 10 MiB for JSON, UPLOAD_LIMIT_BYTES (2 GiB by default) for a streamed file upload.',
    action: 'Send a smaller body; upload large files with POST /v1/sources/upload, or connect a source (a URL or database) instead of sending the rows.',
  },
  unsupported_media_type: {
    meaning: 'A file upload came in a media type, content coding or charset the operation does not take, or in another format than the one named.',
    action:
      'Upload the file as text/csv, application/x-ndjson, application/json (an array of objects) or multipart/form-data, uncompressed and in UTF-8, in the format the source has.',
  },
  unprocessable: {
    meaning:
      'The request is well-formed but cannot be carried out: for example a source or webhook URL points at an address the platform may not connect to, a model cannot compute an output for the inputs, or an Idempotency-Key was reused with a different body.',
    action: 'Read detail and change the request; retrying it unchanged gives the same answer.',
  },
  rate_limited: {
    meaning: 'The rate limit of your plan (requests per minute per account) is used up, or too many failed authentications came from your address.',
    action: 'Wait the seconds Retry-After gives before retrying; the RateLimit headers on every response show what is left. A larger plan raises the limit.',
  },
  internal: {
    meaning: 'An unexpected error occurred on our side. Nothing about the request is wrong.',
    action: 'Retry with backoff. If it persists, contact support with the requestId of the problem body.',
  },
  bad_gateway: {
    meaning: 'The service behind the gateway failed to answer properly.',
    action: 'Retry with backoff; send an Idempotency-Key with POST requests so a retry cannot do the work twice.',
  },
  unavailable: {
    meaning: 'A service or one of its dependencies is temporarily unavailable (for example during a deployment or an outage).',
    action: 'Wait the seconds Retry-After gives, then retry; send an Idempotency-Key with POST requests so a retry is safe.',
  },
  timeout: {
    meaning: 'The service behind the gateway did not answer in time. The operation may or may not have been carried out.',
    action: 'Retry with backoff, sending the same Idempotency-Key on a POST so the work cannot be done twice.',
  },
};

const esc = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The problem type a problem-page slug names, if any. */
export function problemBySlug(slug: string): { name: ProblemTypeName; status: number; title: string; slug: string } | undefined {
  const found = Object.entries(PROBLEM_TYPES).find(([, e]) => e.slug === slug);
  return found ? { name: found[0] as ProblemTypeName, ...found[1] } : undefined;
}

/** The codes a response of this problem type can carry. */
export const codesOfProblemType = (name: ProblemTypeName): ErrorCode[] => (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => problemTypeOf(code) === name);

/**
 * The `code` member of the Problem schema in the OpenAPI document: a table of every code with its status and
 * type page, and the same as `x-error-codes` for tools. Not an enum: a client built today must still read a
 * problem whose code was added later.
 */
export function problemCodeSchema(): Record<string, unknown> {
  const rows = Object.entries(ERROR_CODE_GROUPS).flatMap(([group, codes]) =>
    codes.map((code) => `| \`${code}\` | ${statusOf(code)} | ${group} | ${ERROR_CODES[code].meaning.replaceAll('|', '\\|')} |`),
  );
  return {
    type: 'string',
    description: [
      'What failed, as a stable machine-readable code; `type` links to the page of its class. New codes may be added; a published code keeps its name and status.',
      '',
      '| code | status | raised by | meaning |',
      '|---|---|---|---|',
      ...rows,
    ].join('\n'),
    examples: ['source_not_found', 'validation_failed'],
    'x-error-codes': Object.fromEntries(
      (Object.keys(ERROR_CODES) as ErrorCode[]).map((code) => [
        code,
        { status: statusOf(code), type: PROBLEM_TYPE_BASE + PROBLEM_TYPES[problemTypeOf(code)].slug, meaning: ERROR_CODES[code].meaning },
      ]),
    ),
  };
}

const STYLE =
  'body{font:16px/1.55 system-ui,sans-serif;max-width:760px;margin:0 auto;padding:1.5rem;color:#1a1a2e}code{background:#f3f3f7;padding:0 .25rem;border-radius:4px}dt{font-weight:600;margin-top:.75rem}a{color:#1f6feb}li{margin:.2rem 0}';
const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${esc(title)}</title><link rel="stylesheet" href="/docs/assets/problems.css"></head><body>${body}</body></html>`;
export const PROBLEM_PAGE_CSS = STYLE;

/** The page a problem `type` URL answers with: what the error means, what to do, and the codes it carries. */
export function problemPage(slug: string): string | undefined {
  const entry = problemBySlug(slug);
  if (!entry) return undefined;
  const guide = PROBLEM_GUIDE[entry.name];
  const codes = codesOfProblemType(entry.name).map((code) => `<li id="${esc(code)}"><code>${esc(code)}</code>: ${esc(ERROR_CODES[code].meaning)}</li>`);
  return page(
    `${entry.title}: ${entry.slug} — API problem types`,
    `<nav><a href="/docs/problems">All problem types</a> · <a href="/docs">API reference</a></nav>
<h1>${esc(entry.title)} <small>(<code>${esc(entry.slug)}</code>)</small></h1>
<dl><dt>Status</dt><dd>${entry.status}</dd><dt>type</dt><dd><code>${esc(PROBLEM_TYPE_BASE + entry.slug)}</code></dd>
<dt>What it means</dt><dd>${esc(guide.meaning)}</dd><dt>What to do</dt><dd>${esc(guide.action)}</dd></dl>
<h2>Codes</h2><p>The <code>code</code> member of the body says exactly what failed:</p><ul>${codes.join('')}</ul>
<p>Every error body is an RFC 9457 problem document (<code>application/problem+json</code>) with <code>type</code>, <code>title</code>, <code>status</code>, <code>detail</code>, <code>instance</code>, <code>code</code> and <code>requestId</code>; quote the <code>requestId</code> when you contact support.</p>`,
  );
}

/** The index of every problem type. */
export function problemIndexPage(): string {
  const rows = Object.entries(PROBLEM_TYPES).map(
    ([name, e]) =>
      `<li><a href="/docs/problems/${esc(e.slug)}">${esc(e.title)} (<code>${esc(e.slug)}</code>, ${e.status})</a>: ${esc(PROBLEM_GUIDE[name as ProblemTypeName].meaning)}</li>`,
  );
  return page(
    'API problem types',
    `<nav><a href="/docs">API reference</a></nav><h1>Problem types</h1><p>The <code>type</code> of every error body links to one of these pages; its <code>code</code> names the exact failure.</p><ul>${rows.join('')}</ul>`,
  );
}
