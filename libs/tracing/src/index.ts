import {
  context,
  createContextKey,
  trace,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
  type Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

export { context, trace, SpanKind, SpanStatusCode, ROOT_CONTEXT, type Context, type Span, type Tracer, type Attributes };

/**
 * A trace context as W3C Trace Context headers: what an event or a delivery stores so that work done later,
 * in another process, continues the trace of the request that caused it.
 */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

type HeaderBag = Record<string, string | string[] | undefined>;

const propagator = new W3CTraceContextPropagator();
const getter: TextMapGetter<HeaderBag> = {
  get: (carrier, key) => carrier[key],
  keys: (carrier) => Object.keys(carrier),
};

/**
 * The context a `traceparent` (and `tracestate`) names, on top of `base`. A malformed or all-zero header is
 * ignored (W3C Trace Context says so): the caller then starts a new trace, and nobody gets an error.
 */
export function extractContext(headers: HeaderBag, base: Context = ROOT_CONTEXT): Context {
  if (headers.traceparent === undefined) return base;
  return propagator.extract(base, headers, getter);
}

/** The headers that carry `ctx` onwards; undefined when it holds no valid span context. */
export function carrierOf(ctx: Context): TraceCarrier | undefined {
  const out: Record<string, string> = {};
  propagator.inject(ctx, out, { set: (c, k, v) => void (c[k] = v) });
  if (!out.traceparent) return undefined;
  return out.tracestate ? { traceparent: out.traceparent, tracestate: out.tracestate } : { traceparent: out.traceparent };
}

/** The context a stored carrier names (ROOT_CONTEXT for none or a bad one). */
export function contextOf(carrier: TraceCarrier | undefined | null): Context {
  return carrier ? extractContext(carrier as unknown as HeaderBag) : ROOT_CONTEXT;
}

/** The carrier of the span active here (the request being handled, the event being consumed), if any. */
export function activeCarrier(): TraceCarrier | undefined {
  return trace.getSpan(context.active()) ? carrierOf(context.active()) : undefined;
}

/** The trace id of the span active here, for log lines; undefined outside a valid one. */
export function activeTraceId(): string | undefined {
  const sc = trace.getSpan(context.active())?.spanContext();
  return sc && sc.traceId !== '00000000000000000000000000000000' ? sc.traceId : undefined;
}

/** What `startTracing` takes; `tracingSettingsOf` of @dap/config maps the OTEL_* variables to it. */
export interface TracingSettings {
  serviceName: string;
  /** OTLP/HTTP base URL (the exporter posts to `<endpoint>/v1/traces`); unset: nothing is recorded or exported. */
  endpoint?: string | undefined;
  /** A full traces URL, overriding `endpoint` (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). */
  tracesEndpoint?: string | undefined;
  /** Headers for the collector (an API token). */
  headers?: Record<string, string> | undefined;
  /** The share of new traces (no sampled parent) that are recorded, 0 to 1; a parent's decision is followed. */
  sampleRatio: number;
  /** How long spans wait to be sent in one batch; default 5 s. */
  exportDelayMs?: number;
}

/** The API's tracer with no provider behind it: spans are non-recording, and carry their parent's context on. */
const NOOP_TRACER = trace.getTracerProvider().getTracer('dap');

let current: Tracer = NOOP_TRACER;
let recording = false;
let contextManager: AsyncLocalStorageContextManager | null = null;

/** The process's tracer: recording when an endpoint is configured, else one that only passes contexts on. */
export function tracer(): Tracer {
  return current;
}

/** Whether spans are recorded and exported; code on a hot path skips span work when not and no context came in. */
export function tracingEnabled(): boolean {
  return recording;
}

export interface Tracing {
  enabled: boolean;
  /** Sends the spans that are waiting (tests, shutdown). */
  flush(): Promise<void>;
  /** Sends what is waiting and stops recording. */
  shutdown(): Promise<void>;
}

/**
 * A service's tracing as a lifecycle resource (`life.open(...tracingResource(settings))`): opened first and
 * closed last, so spans of the shutdown itself are still sent.
 */
export function tracingResource(s: TracingSettings) {
  return ['tracing', () => startTracing(s), (t: Tracing) => t.shutdown()] as const;
}

/**
 * Sets up tracing for this process: the context manager (so the context of a request follows its async work,
 * and events written there carry it) always, since a client's `traceparent` is passed on even when nothing is
 * exported; a recording tracer and an OTLP/HTTP exporter only when an endpoint is configured. One process runs
 * one service, so the tracer is the process's (like OpenTelemetry's global one, but replaceable in tests).
 */
export function startTracing(s: TracingSettings): Tracing {
  if (!contextManager) {
    contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
  }
  const url = s.tracesEndpoint ?? (s.endpoint ? `${s.endpoint.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (!url) return { enabled: false, flush: async () => {}, shutdown: async () => {} };
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: s.serviceName }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(s.sampleRatio) }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url, headers: s.headers ?? {} }), { scheduledDelayMillis: s.exportDelayMs ?? 5_000 })],
  });
  const own = provider.getTracer('dap');
  current = own;
  recording = true;
  return {
    enabled: true,
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      if (current === own) {
        current = NOOP_TRACER;
        recording = false;
      }
      await provider.shutdown();
    },
  };
}

/**
 * Starts a span under `parent` unless there is nothing to do: tracing off and no incoming context gives
 * undefined (no span object at all on the hot path). Tracing off with a context gives a non-recording span
 * that carries it on unchanged.
 */
export function startSpan(name: string, opts: { kind: SpanKind; attributes?: Attributes }, parent: Context): Span | undefined {
  if (!recording && !trace.getSpan(parent)) return undefined;
  return current.startSpan(name, opts, parent);
}

/** Ends a span with an error status when `err` is given. */
export function endSpan(span: Span | undefined, err?: unknown): void {
  if (!span) return;
  if (err !== undefined) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
  }
  span.end();
}

const ACCOUNT = createContextKey('dap.accountId');

/** `ctx` as the work of one account (the caller of a request, the owner of a consumed event or a delivery). */
export function withAccount(ctx: Context, accountId: string): Context {
  return ctx.setValue(ACCOUNT, accountId);
}

/**
 * Gives each event that has no trace yet the one active here (a request's, a consumed event's), to store with
 * it; only an event of the account the context works for. Background work can end up running in a request's
 * context (a queue or timer first started while handling it): its events then get no trace rather than a
 * trace id that another account sent.
 */
export function stampActiveTrace<T extends { accountId: string; trace?: TraceCarrier | undefined }>(events: T[]): T[] {
  if (!events.length) return events;
  const active = context.active();
  const accountId = active.getValue(ACCOUNT);
  if (accountId === undefined) return events;
  const carrier = activeCarrier();
  if (carrier) for (const e of events) if (e.accountId === accountId) e.trace ??= carrier;
  return events;
}
