import { startReceiver } from '@dap/testing';
import { activeCarrier, carrierOf, context, contextOf, extractContext, SpanKind, stampActiveTrace, startSpan, startTracing, trace, tracingEnabled, withAccount } from './index.ts';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const SAMPLED = `00-${TRACE_ID}-${PARENT_ID}-01`;
const NOT_SAMPLED = `00-${TRACE_ID}-${PARENT_ID}-00`;

/** OTLP/HTTP JSON: every span of every request the receiver got. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
}
const spansOf = (bodies: string[]): OtlpSpan[] =>
  bodies.flatMap((b) => (JSON.parse(b) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));

describe('extracting and passing on a trace context', () => {
  it('reads a valid traceparent and tracestate, and writes them back unchanged', () => {
    const ctx = extractContext({ traceparent: SAMPLED, tracestate: 'vendor=abc,other=1' });
    expect(trace.getSpanContext(ctx)).toMatchObject({ traceId: TRACE_ID, spanId: PARENT_ID, traceFlags: 1, isRemote: true });
    expect(carrierOf(ctx)).toEqual({ traceparent: SAMPLED, tracestate: 'vendor=abc,other=1' });
    expect(carrierOf(contextOf({ traceparent: NOT_SAMPLED }))).toEqual({ traceparent: NOT_SAMPLED });
  });

  it.each([
    ['garbage', 'not-a-traceparent'],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${PARENT_ID}-01`],
    ['an all-zero parent id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE_ID}-${PARENT_ID}-01`],
    ['upper-case hex', `00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-01`],
    ['a short trace id', `00-${TRACE_ID.slice(2)}-${PARENT_ID}-01`],
    ['an extra field in version 00', `${SAMPLED}-extra`],
    ['two headers (joined by Node)', `${SAMPLED}, ${SAMPLED}`],
  ])('ignores %s: no context, never an error', (_what, traceparent) => {
    const ctx = extractContext({ traceparent });
    expect(trace.getSpan(ctx)).toBeUndefined();
    expect(carrierOf(ctx)).toBeUndefined();
    expect(contextOf(undefined)).toBe(extractContext({}));
  });
});

describe('tracing off (no endpoint)', () => {
  const off = startTracing({ serviceName: 'test', sampleRatio: 1 });
  afterAll(() => off.shutdown());

  it('makes no span without an incoming context, and passes an incoming one on unchanged', () => {
    expect(off.enabled).toBe(false);
    expect(tracingEnabled()).toBe(false);
    expect(startSpan('GET /x', { kind: SpanKind.SERVER }, extractContext({}))).toBeUndefined();
    const parent = extractContext({ traceparent: SAMPLED });
    const span = startSpan('GET /x', { kind: SpanKind.SERVER }, parent)!;
    expect(span.isRecording()).toBe(false);
    expect(carrierOf(trace.setSpan(parent, span))).toEqual({ traceparent: SAMPLED });
  });

  it("stamps an account's events written inside its context, and leaves the rest alone", () => {
    type Ev = { accountId: string; trace?: { traceparent: string } };
    const ctx = withAccount(extractContext({ traceparent: SAMPLED }), 'acct_a');
    const [mine, other] = context.with(ctx, () => stampActiveTrace<Ev>([{ accountId: 'acct_a' }, { accountId: 'acct_b' }]));
    expect(mine!.trace).toEqual({ traceparent: SAMPLED });
    // Background work of another account that runs in this context must not get this account's trace id.
    expect(other!.trace).toBeUndefined();
    // An event that has its trace already keeps it.
    const [kept] = context.with(ctx, () => stampActiveTrace<Ev>([{ accountId: 'acct_a', trace: { traceparent: NOT_SAMPLED } }]));
    expect(kept!.trace).toEqual({ traceparent: NOT_SAMPLED });
    // A context that works for no account (not a request's, not an event's) stamps nothing.
    const [loose] = context.with(extractContext({ traceparent: SAMPLED }), () => stampActiveTrace<Ev>([{ accountId: 'acct_a' }]));
    expect(loose!.trace).toBeUndefined();
    expect(stampActiveTrace<Ev>([{ accountId: 'acct_a' }])[0]!.trace).toBeUndefined();
    expect(activeCarrier()).toBeUndefined();
  });
});

describe('tracing on (an OTLP endpoint)', () => {
  let collector: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    collector = await startReceiver();
  });
  afterAll(() => collector.close());

  it('follows the sampled flag of the parent, and exports the recorded spans over OTLP/HTTP', async () => {
    const on = startTracing({ serviceName: 'unit', endpoint: collector.url, sampleRatio: 0, exportDelayMs: 60_000 });
    try {
      expect(tracingEnabled()).toBe(true);
      const sampledParent = extractContext({ traceparent: SAMPLED });
      const recorded = startSpan('POST /v1/things', { kind: SpanKind.SERVER }, sampledParent)!;
      expect(recorded.isRecording()).toBe(true);
      const child = carrierOf(trace.setSpan(sampledParent, recorded))!;
      expect(child.traceparent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
      expect(child.traceparent).not.toContain(PARENT_ID); // the parent id is now our span's
      recorded.end();

      const unsampledParent = extractContext({ traceparent: NOT_SAMPLED });
      const dropped = startSpan('POST /v1/other', { kind: SpanKind.SERVER }, unsampledParent)!;
      expect(dropped.isRecording()).toBe(false);
      expect(carrierOf(trace.setSpan(unsampledParent, dropped))!.traceparent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-00$`));
      dropped.end();
      // A new trace under a ratio of 0 is not recorded either.
      const root = startSpan('GET /v1/root', { kind: SpanKind.SERVER }, extractContext({}))!;
      expect(root.isRecording()).toBe(false);
      root.end();

      await on.flush();
      const exports = collector.received.filter((r) => r.path === '/v1/traces');
      expect(exports).toHaveLength(1);
      expect(exports[0]!.headers['content-type']).toBe('application/json');
      const spans = spansOf(exports.map((r) => r.body));
      expect(spans.map((s) => ({ name: s.name, traceId: s.traceId, parentSpanId: s.parentSpanId }))).toEqual([
        { name: 'POST /v1/things', traceId: TRACE_ID, parentSpanId: PARENT_ID },
      ]);
      expect(exports[0]!.body).toContain('"unit"'); // the service name
    } finally {
      await on.shutdown();
    }
    expect(tracingEnabled()).toBe(false);
  });

  it('sends nothing when no endpoint is configured (the control above sees the export when one is)', async () => {
    const before = collector.received.length;
    const off = startTracing({ serviceName: 'unit', sampleRatio: 1 });
    const span = startSpan('POST /v1/things', { kind: SpanKind.SERVER }, extractContext({ traceparent: SAMPLED }))!;
    span.end();
    await off.flush();
    await off.shutdown();
    expect(span.isRecording()).toBe(false);
    expect(collector.received.length).toBe(before);
  });
});
