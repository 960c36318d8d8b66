import type * as OrtModule from 'onnxruntime-node';
import type { InferenceSession, Tensor } from 'onnxruntime-node';

/**
 * onnxruntime-node sessions: loading (to verify an upload) and running. It runs on the prediction worker
 * threads. (It also has to: under jest, the addon's output tensors come from another JavaScript realm
 * than the test's, so inference only works in a worker, which runs under Node's own loader.)
 */
export interface TensorInfo {
  name: string;
  /** onnxruntime's element type name (float32, int64, ...), or null when not a tensor. */
  type: string | null;
  /** Fixed sizes as numbers, symbolic dimensions as names; empty when the model does not say. */
  shape: (number | string)[];
}
export interface OnnxInspection {
  inputs: TensorInfo[];
  outputs: TensorInfo[];
}

/** One input tensor of one feed: its element type, dimensions and values in row-major order. */
export interface FeedTensor {
  type: string;
  dims: number[];
  data: number[];
}
export type OnnxFeed = Record<string, FeedTensor>;
export type NestedValues = number | boolean | NestedValues[];

type Ort = typeof OrtModule;

/** Loaded on first use, so a worker that never runs ONNX never loads the native addon. */
let ortModule: Promise<Ort> | null = null;
const ort = () => (ortModule ??= import('onnxruntime-node'));

const SESSION_OPTIONS: InferenceSession.SessionOptions = {
  // One thread per session: the prediction pool is the unit of parallelism, and the machine is shared.
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
};

function infoOf(meta: readonly InferenceSession.ValueMetadata[]): TensorInfo[] {
  return meta.map((m) => {
    if (!m.isTensor) return { name: m.name, type: null, shape: [] };
    return { name: m.name, type: m.type, shape: m.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : String(d))) };
  });
}

const TYPED: Record<string, (data: number[]) => Tensor['data']> = {
  float32: (d) => Float32Array.from(d),
  float64: (d) => Float64Array.from(d),
  int8: (d) => Int8Array.from(d),
  uint8: (d) => Uint8Array.from(d),
  int16: (d) => Int16Array.from(d),
  uint16: (d) => Uint16Array.from(d),
  int32: (d) => Int32Array.from(d),
  uint32: (d) => Uint32Array.from(d),
  int64: (d) => BigInt64Array.from(d, (v) => BigInt(v)),
  uint64: (d) => BigUint64Array.from(d, (v) => BigInt(v)),
  bool: (d) => Uint8Array.from(d),
};

/** Row-major values to nested arrays of the given dimensions. */
export function nest(values: readonly (number | boolean)[], dims: readonly number[]): NestedValues {
  if (!dims.length) return values[0] ?? 0;
  const build = (offset: number, axis: number): NestedValues[] => {
    const size = dims[axis]!;
    if (axis === dims.length - 1) return values.slice(offset, offset + size) as NestedValues[];
    const stride = dims.slice(axis + 1).reduce((p, d) => p * d, 1);
    return Array.from({ length: size }, (_, i) => build(offset + i * stride, axis + 1));
  };
  return build(0, 0);
}

function plain(tensor: Tensor): NestedValues {
  const data = tensor.data;
  let values: (number | boolean)[];
  if (tensor.type === 'bool') values = Array.from(data as Uint8Array, (v) => v !== 0);
  else if (data instanceof BigInt64Array || data instanceof BigUint64Array) values = Array.from(data, (v) => Number(v));
  else if (ArrayBuffer.isView(data)) values = Array.from(data as unknown as ArrayLike<number>);
  else throw new Error(`output type ${tensor.type} is not supported`);
  return nest(values, tensor.dims);
}

export class OnnxEngine {
  private readonly sessions = new Map<string, Promise<InferenceSession>>();
  private readonly maxSessions: number;

  constructor(maxSessions = 16) {
    this.maxSessions = maxSessions;
  }

  /** Loads a model to read its inputs and outputs, then releases it; throws onnxruntime's reason. */
  async inspect(model: Uint8Array): Promise<OnnxInspection> {
    const { InferenceSession } = await ort();
    const session = await InferenceSession.create(model, SESSION_OPTIONS);
    try {
      return { inputs: infoOf(session.inputMetadata), outputs: infoOf(session.outputMetadata) };
    } finally {
      await session.release();
    }
  }

  has(key: string): boolean {
    return this.sessions.has(key);
  }

  /** Keeps a session under `key`, evicting the least recently used beyond the cap. */
  load(key: string, model: Uint8Array): Promise<InferenceSession> {
    const existing = this.sessions.get(key);
    if (existing) return existing;
    const created = ort().then(({ InferenceSession }) => InferenceSession.create(model, SESSION_OPTIONS));
    created.catch(() => this.sessions.delete(key));
    this.sessions.set(key, created);
    while (this.sessions.size > this.maxSessions) {
      const [oldest, session] = this.sessions.entries().next().value!;
      this.sessions.delete(oldest);
      void session.then((s) => s.release()).catch(() => {});
    }
    return created;
  }

  /** Runs each feed in turn; one output object (output name → nested values) per feed. */
  async run(key: string, feeds: readonly OnnxFeed[]): Promise<Record<string, NestedValues>[]> {
    const pending = this.sessions.get(key);
    if (!pending) throw new Error(`no session ${key}`);
    // Touch: most recently used last.
    this.sessions.delete(key);
    this.sessions.set(key, pending);
    const session = await pending;
    const { Tensor } = await ort();
    const results: Record<string, NestedValues>[] = [];
    for (const feed of feeds) {
      const inputs: Record<string, Tensor> = {};
      for (const [name, t] of Object.entries(feed)) {
        const make = TYPED[t.type];
        if (!make) throw new Error(`input type ${t.type} is not supported`);
        inputs[name] = new Tensor(t.type as 'float32', make(t.data) as Float32Array, t.dims);
      }
      const out = await session.run(inputs);
      const answer: Record<string, NestedValues> = {};
      for (const name of session.outputNames) answer[name] = plain(out[name]!);
      results.push(answer);
    }
    return results;
  }
}
