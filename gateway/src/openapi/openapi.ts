import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { MAX_JSON_DEPTH, MAX_LISTED_ERRORS } from '@dap/http';
import {
  API_OPERATIONS,
  FILE_FORMATS,
  IDEMPOTENCY_KEY_PATTERN,
  listQuerySchema,
  operationTakesIdempotencyKey,
  PUBLIC_EVENT_DESCRIPTIONS,
  problemSchema,
  UPLOAD_FILE_FIELD,
  webhookPayloadSchema,
  type ApiOperation,
  type PublicEventType,
} from '@dap/contracts';
import { REQUEST_EXAMPLES, RESPONSE_EXAMPLES, WEBHOOK_EXAMPLES } from './examples.ts';
import { problemCodeSchema } from './problems.ts';

type Json = Record<string, unknown>;

/** JSON Schema (2020-12, as OpenAPI 3.1 uses) for one zod schema; named schemas become components. */
function schemaOf(schema: z.ZodType, io: 'input' | 'output', components: Json): Json {
  const id = z.globalRegistry.get(schema)?.id;
  const json = z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'any', reused: 'inline', cycles: 'ref' }) as Json;
  const toComponents = (v: unknown) => JSON.parse(JSON.stringify(v).replaceAll('"#/$defs/', '"#/components/schemas/')) as Json;
  const { $schema: _drop, $defs: defs, ...rest } = json;
  for (const [k, v] of Object.entries((defs ?? {}) as Json)) components[k] = toComponents(v);
  const body = toComponents(rest);
  if (!id) return body;
  if (body.$ref !== `#/components/schemas/${id}`) components[id] = body;
  return { $ref: `#/components/schemas/${id}` };
}

/** A media type object with the example of its component, when there is one. */
function media(schema: Json, examples: Record<string, unknown>): Json {
  const name = typeof schema.$ref === 'string' ? schema.$ref.slice('#/components/schemas/'.length) : undefined;
  return name && name in examples ? { schema, example: examples[name] } : { schema };
}

const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

/**
 * The responses, parameters and headers many operations share are components, referred to by name, so the
 * document (and the client generated from it) says each once.
 */
class SharedComponents {
  readonly responses: Json = {};
  readonly parameters: Json = {};
  readonly headers: Json = {};

  ref(kind: 'responses' | 'parameters' | 'headers', name: string, value: Json): Json {
    const known = this[kind][name];
    if (known !== undefined && !isDeepStrictEqual(known, value)) throw new Error(`two different ${kind} components are named ${name}`);
    this[kind][name] = value;
    return { $ref: `#/components/${kind}/${name}` };
  }
}

const rateHeaders: Json = {
  'X-Request-Id': { description: 'The request id, also in logs and error bodies.', schema: { type: 'string' } },
  traceresponse: {
    description:
      'W3C Trace Context `traceresponse`: the trace id and the gateway span of this request, when the request sent a valid `traceparent` or the platform records traces.',
    schema: { type: 'string' },
  },
  RateLimit: { description: 'IETF draft RateLimit: remaining requests (r) and seconds to reset (t).', schema: { type: 'string' } },
  'RateLimit-Policy': { description: 'IETF draft RateLimit-Policy: quota (q) per window seconds (w).', schema: { type: 'string' } },
  'X-RateLimit-Limit': { description: 'Requests allowed per minute on the plan.', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in the current sliding window.', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'Unix time (seconds) when a request slot frees up.', schema: { type: 'integer' } },
};

/** The headers of a success response: the rate-limit and request-id headers, and Location where a resource was made or work started. */
function successHeaders(status: number, shared: SharedComponents): Json {
  const headers: Json = { ...rateHeaders, ...(status === 201 || status === 202 ? { Location: { schema: { type: 'string' } } } : {}) };
  return Object.fromEntries(Object.entries(headers).map(([name, header]) => [name, shared.ref('headers', name, header as Json)]));
}

/** An error response as the document names it (a component shared by the operations that answer it alike). */
interface ErrorResponse {
  description: string;
  /** The component's name; none for words that belong to one operation (its errorNotes). */
  name?: string;
}

/** Every operation can answer these: they come from the gateway and the shared service middleware. */
const COMMON_ERRORS: Record<number, Required<ErrorResponse>> = {
  400: {
    name: 'BadRequest',
    description: `The request is malformed or fails validation; errors[] names each invalid field (at most ${MAX_LISTED_ERRORS}, with errorCount when there were more). Besides the schemas, every request is refused for a query parameter the operation does not list or one given twice, and every JSON body for nesting deeper than ${MAX_JSON_DEPTH} levels, a field name starting with $ or named __proto__, or a string that is not valid Unicode (a lone surrogate).`,
  },
  413: { name: 'PayloadTooLarge', description: 'The request body is larger than the limit.' },
  429: { name: 'TooManyRequests', description: 'The plan rate limit is exceeded, or too many failed authentications came from this address; see Retry-After.' },
  500: { name: 'InternalError', description: 'An unexpected error occurred.' },
  502: { name: 'BadGateway', description: 'The service behind the gateway failed to answer.' },
  503: { name: 'Unavailable', description: 'A service or one of its dependencies is temporarily unavailable; see Retry-After.' },
};
const EXTRA_ERRORS: Record<number, Required<ErrorResponse>> = {
  404: { name: 'NotFound', description: 'The resource does not exist (or belongs to another account).' },
  409: { name: 'Conflict', description: 'The request conflicts with the resource state.' },
  415: { name: 'UnsupportedMediaType', description: 'The request body has a media type (or content coding) this operation does not take.' },
  422: { name: 'Unprocessable', description: 'The request is well-formed but cannot be carried out.' },
  503: COMMON_ERRORS[503]!,
};
const IDEMPOTENCY_ERRORS: Record<number, Required<ErrorResponse>> = {
  409: { name: 'IdempotencyKeyInUse', description: 'A request with the same Idempotency-Key is still in progress; see Retry-After.' },
  422: { name: 'IdempotencyKeyReused', description: 'The Idempotency-Key was used before with a different request body.' },
};

/** The error statuses an operation can answer, each with what it means there. */
export function errorResponsesOf(op: ApiOperation): Record<number, ErrorResponse> {
  const auth = op.auth ?? 'any';
  const out: Record<number, ErrorResponse> = { ...COMMON_ERRORS };
  if (op.operationId === 'login') out[401] = { description: 'The email or password is wrong.' };
  else if (auth === 'session') out[401] = { name: 'SessionMissing', description: 'The dashboard session is missing or has ended.' };
  else if (auth !== 'public') out[401] = { name: 'Unauthorized', description: 'The API key or session is missing or invalid.' };
  const reasons403 = [
    ...(op.scope ? [[op.scope.replace(':', '-'), `the API key lacks the ${op.scope} scope`]] : []),
    ...(auth === 'session' ? [['session', 'the operation needs a dashboard session, not an API key']] : []),
    ...(auth !== 'public' && op.method !== 'get' ? [['csrf', 'a dashboard request did not send its x-csrf-token']] : []),
  ];
  if (reasons403.length)
    out[403] = { name: ['Forbidden', ...reasons403.map(([key]) => key)].join('.'), description: `Forbidden: ${reasons403.map(([, why]) => why).join('; or ')}.` };
  const notes = op.errorNotes ?? {};
  const statuses = new Set([...op.errors, ...(operationTakesIdempotencyKey(op) ? [409, 422] : [])]);
  for (const status of statuses) {
    const note = notes[status];
    const own: ErrorResponse | null = op.errors.includes(status)
      ? note
        ? { description: `${note[0]!.toUpperCase()}${note.slice(1)}.` }
        : (EXTRA_ERRORS[status] ?? COMMON_ERRORS[status] ?? { description: 'Error.' })
      : null;
    const idem = operationTakesIdempotencyKey(op) ? IDEMPOTENCY_ERRORS[status] : undefined;
    const parts = [own, idem].filter((r): r is ErrorResponse => !!r);
    out[status] = {
      description: parts.map((r) => r.description).join(' Or: '),
      ...(parts.every((r) => r.name) ? { name: parts.map((r) => r.name).join('Or') } : {}),
    };
  }
  return out;
}

/** The query parameters of a query schema, each with its schema and description. */
function queryParametersOf(query: z.ZodType, components: Json): Json[] {
  const q = schemaOf(query, 'input', components) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(q.properties ?? {}).map(([name, schema]) => {
    const { description, ...rest } = schema as { description?: string };
    return { name, in: 'query', required: q.required?.includes(name) ?? false, schema: rest, ...(description ? { description } : {}) };
  });
}

function parametersOf(op: ApiOperation, components: Json, shared: SharedComponents): Json[] {
  const params: Json[] = [];
  for (const m of op.path.matchAll(/\{(\w+)\}/g)) {
    params.push(shared.ref('parameters', m[1]!, { name: m[1], in: 'path', required: true, schema: { type: 'string' }, description: 'Resource identifier.' }));
  }
  if (op.query) {
    // The page size and cursor of every list are one shared parameter each; a list that gave them another
    // meaning (say, another default) would document its own.
    const listParams = queryParametersOf(listQuerySchema, components);
    for (const param of queryParametersOf(op.query, components)) {
      params.push(listParams.some((p) => isDeepStrictEqual(p, param)) ? shared.ref('parameters', String(param.name), param) : param);
    }
  }
  if (operationTakesIdempotencyKey(op)) {
    params.push(
      shared.ref('parameters', 'Idempotency-Key', {
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        schema: { type: 'string', minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY_PATTERN.source },
        description:
          'Makes a retry safe: the first answer (below 500) is kept for 24 h and replayed for the same key and body; the same key with another body is a 422, and a retry while the first request runs is a 409. 1 to 255 visible ASCII characters; anything else is a 400.',
      }),
    );
  }
  return params;
}

/** A streamed file body: the raw file in each of its media types, or a multipart form with the file and its fields. */
function uploadBody(upload: NonNullable<ApiOperation['upload']>, components: Json): Json {
  const file = schemaOf(upload.schema, 'input', components);
  const content: Json = {};
  for (const type of upload.mediaTypes) {
    content[type] =
      type === 'multipart/form-data'
        ? {
            schema: {
              type: 'object',
              required: [UPLOAD_FILE_FIELD],
              properties: {
                [UPLOAD_FILE_FIELD]: file,
                name: { type: 'string', description: 'the source name (or the query parameter)' },
                format: { type: 'string', enum: [...FILE_FORMATS], description: "the file format; by default the part's Content-Type, then the file name's extension" },
              },
            },
          }
        : { schema: file };
  }
  return {
    required: true,
    description: 'The file, streamed: not held in memory by the gateway or the service. Up to UPLOAD_LIMIT_BYTES (2 GiB by default).',
    content,
  };
}

/** The OpenAPI 3.1 document, generated from the same operation table and zod schemas that validate. */
export function buildOpenApi(serverUrl: string): Json {
  const components: Json = {};
  schemaOf(problemSchema, 'output', components);
  (components.Problem as { properties: Json }).properties.code = problemCodeSchema();
  const shared = new SharedComponents();
  const paths: Record<string, Json> = {};
  for (const op of API_OPERATIONS) {
    const responses: Json = {};
    const auth = op.auth ?? 'any';
    const success = op.success;
    const okBody = success.schema ? { content: { [success.mediaType ?? 'application/json']: media(schemaOf(success.schema, 'output', components), RESPONSE_EXAMPLES) } } : {};
    responses[String(success.status)] = {
      description: success.status === 204 ? 'Done; no content.' : 'Success.',
      headers: successHeaders(success.status, shared),
      ...okBody,
    };
    for (const alt of success.alt ?? []) {
      responses[String(alt.status)] = {
        description: alt.description ?? 'Accepted; the work finishes in the background. Poll the Location.',
        headers: successHeaders(alt.status, shared),
        content: { 'application/json': media(schemaOf(alt.schema, 'output', components), RESPONSE_EXAMPLES) },
      };
    }
    for (const [status, { name, description }] of Object.entries(errorResponsesOf(op)))
      responses[status] = name ? shared.ref('responses', name, problemResponse(description)) : problemResponse(description);
    const security = auth === 'public' ? [] : auth === 'session' ? [{ sessionCookie: [] }] : [{ bearerAuth: op.scope ? [op.scope] : [] }, { sessionCookie: [] }];
    const operation: Json = {
      operationId: op.operationId,
      summary: op.summary,
      tags: [op.service === 'gateway' ? 'account' : op.service],
      'x-required-scope': op.scope,
      'x-auth': auth,
      security,
      parameters: parametersOf(op, components, shared),
      responses,
    };
    if (op.body) {
      operation.requestBody = { required: !op.body.safeParse(undefined).success, content: { 'application/json': media(schemaOf(op.body, 'input', components), REQUEST_EXAMPLES) } };
    }
    if (op.upload) operation.requestBody = uploadBody(op.upload, components);
    paths[op.path] = { ...(paths[op.path] ?? {}), [op.method]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Data Analytics and Model Prediction API',
      version: '1.0.0',
      description:
        'Connect data sources, run analytics queries that produce reports, run predictions on models and receive signed webhooks. Every request carries `Authorization: Bearer <API_KEY>`; API keys are created in the dashboard under Settings > API Keys. Rate limits are per account and per minute: Starter 100, Professional 1,000, Enterprise 10,000. Errors are RFC 9457 problem documents (`application/problem+json`); their `type` is a relative reference to a page explaining the error, `/docs/problems/<slug>` on this host (all of them: [/docs/problems](/docs/problems)).\n\n## Webhooks\n\n' +
        WEBHOOK_RECIPE +
        '\n\n## Tracing\n\n' +
        TRACING_NOTE,
    },
    servers: [{ url: `${serverUrl}/v1` }],
    webhooks: webhooksOf(components),
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      schemas: components,
      responses: shared.responses,
      parameters: shared.parameters,
      headers: shared.headers,
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key from Settings > API Keys.' },
        sessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'dap_session',
          description: 'A dashboard session from POST /v1/auth/login; requests that change state also send the x-csrf-token header.',
        },
      },
    },
  };
}

const sigHeaders = {
  'webhook-id': { description: 'The event id; the same on every retry, so use it to drop duplicates.', schema: { type: 'string' }, required: true },
  'webhook-timestamp': { description: 'Unix time (seconds) of this attempt; refuse one more than 5 minutes from your clock.', schema: { type: 'string' }, required: true },
  'webhook-signature': {
    description: 'Space-separated `v1,<base64 HMAC-SHA256>` signatures (two during a secret rotation); one must match.',
    schema: { type: 'string' },
    required: true,
  },
};

/** The W3C Trace Context headers of a delivery: not signed, and absent when the event has no trace. */
const traceHeaders = {
  traceparent: {
    description:
      'W3C Trace Context: the delivery attempt, in the trace of the request that caused the event (the `traceparent` your request sent, or the trace the platform started for it). Absent when the event was not caused by a traced request.',
    schema: { type: 'string' },
    required: false,
  },
  tracestate: { description: 'W3C Trace Context `tracestate`, as your request sent it.', schema: { type: 'string' }, required: false },
};

/** How a client follows one call across the platform (W3C Trace Context), in the document and on /docs. */
export const TRACING_NOTE = [
  'Send a [W3C Trace Context](https://www.w3.org/TR/trace-context/) `traceparent` (and `tracestate`) header with any request to follow it through the platform: the answer names the trace and the gateway span in `traceresponse`, and every webhook delivery caused by that request (directly, or through the work it started) carries a `traceparent` in the same trace, so your receiver can continue it. An invalid `traceparent` is ignored (a new trace), never refused. The `X-Request-Id` of the request is sent on the deliveries too.',
].join('\n');

/** How a receiver checks a delivery (Standard Webhooks), in the document and on /docs. */
export const WEBHOOK_RECIPE = [
  "Each registered endpoint receives `POST` requests whose JSON body is `{type, timestamp, data}` for the event types it subscribed to (the catalog below has a sample of each). Deliveries are signed as [Standard Webhooks](https://www.standardwebhooks.com/) specifies, with the endpoint's `whsec_…` secret:",
  '',
  '1. Take the raw request body exactly as received (before parsing it), and the `webhook-id`, `webhook-timestamp` and `webhook-signature` headers.',
  '2. Refuse a `webhook-timestamp` more than 5 minutes away from your clock (replays).',
  '3. Compute HMAC-SHA256 over `${webhook-id}.${webhook-timestamp}.${body}` with the key that is the base64 part of the secret after `whsec_` (decoded), and base64-encode it.',
  '4. Accept when it equals, in constant time, one of the `v1,<signature>` entries of `webhook-signature` (during a secret rotation there is one per secret).',
  '5. Answer 2xx within 15 seconds; anything else is retried with backoff. Answering 410 disables the endpoint. Use `webhook-id` to drop a duplicate.',
  '',
  "In Node.js the SDK does all of this: `import { verifyWebhook } from '@dap/sdk/webhooks'; const event = verifyWebhook(rawBody, req.headers, { secrets: process.env.DAP_WEBHOOK_SECRET });` throws `WebhookVerificationError` for a delivery that is not authentic, and returns the typed event otherwise. Any Standard Webhooks library verifies them too.",
].join('\n');

/** The webhook event catalog: one entry per public event type, with its payload schema and a sample. */
function webhooksOf(components: Json): Json {
  const out: Json = {};
  for (const option of webhookPayloadSchema.options) {
    const type = option.shape.type.value as PublicEventType;
    const name = `${type.replace(/(^|[._])(\w)/g, (_m, _sep, c: string) => c.toUpperCase())}Event`;
    components[name] = schemaOf(option, 'output', components);
    out[type] = {
      post: {
        operationId: `on-${type}`,
        summary: type,
        description: `${PUBLIC_EVENT_DESCRIPTIONS[type]}\n\nSent to the endpoints subscribed to \`${type}\` (or a wildcard such as \`${type.split('.')[0]}.*\` or \`*\`). Verify the signature before trusting the body: see Webhooks in the introduction.`,
        tags: ['webhook events'],
        parameters: Object.entries({ ...sigHeaders, ...traceHeaders }).map(([hname, h]) => ({ name: hname, in: 'header', ...h })),
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` }, example: WEBHOOK_EXAMPLES[type] } } },
        responses: {
          '200': { description: 'Any 2xx acknowledges the delivery.' },
          '410': { description: 'Gone: the endpoint is disabled and receives nothing more until it is enabled again.' },
        },
      },
    };
  }
  return out;
}
