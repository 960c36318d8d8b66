import type { TensorSpec } from '@dap/contracts';
import type { FieldError } from '@dap/errors';
import { MAX_FIELD_ERRORS, type ModelRuntime } from '../runtime.ts';
import type { NestedValues, OnnxFeed, OnnxInspection } from './onnx-engine.ts';

/** Where ONNX models load and run: the prediction worker threads (or this thread when there are none). */
export interface OnnxHost {
  inspect(model: Uint8Array): Promise<OnnxInspection>;
  /** Runs feeds on the model under `key`, loading it with `loadModel` when the host does not hold it yet. */
  run(key: string, feeds: OnnxFeed[], loadModel: () => Promise<Uint8Array>): Promise<Record<string, NestedValues>[]>;
}

/** Values in one request, all inputs together, so one request cannot hold a worker for long. */
export const MAX_ONNX_REQUEST_VALUES = 1_000_000;

const INT_RANGE: Record<string, [number, number]> = {
  int8: [-128, 127],
  uint8: [0, 255],
  int16: [-32768, 32767],
  uint16: [0, 65535],
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  uint64: [0, Number.MAX_SAFE_INTEGER],
};
const FLOAT32_MAX = 3.4028234663852886e38;

/** Checks one value for an element type; returns the number to send, or an error message. */
function elementOf(type: TensorSpec['elementType'], v: unknown): number | string {
  if (type === 'bool') {
    if (typeof v === 'boolean') return v ? 1 : 0;
    return v === 0 || v === 1 ? v : 'expected true, false, 0 or 1';
  }
  if (typeof v !== 'number' || !Number.isFinite(v)) return 'expected a finite number';
  if (type === 'float32') return Math.abs(v) <= FLOAT32_MAX ? v : 'out of float32 range';
  if (type === 'float64') return v;
  const [lo, hi] = INT_RANGE[type]!;
  if (!Number.isInteger(v)) return `expected an integer (${type})`;
  return v >= lo && v <= hi ? v : `out of ${type} range [${lo}, ${hi}]`;
}

/**
 * Reads nested arrays into row-major values and their dimensions; the first problem comes back with the
 * path below the input (e.g. `.1` for the second row).
 */
export function flatten(value: unknown, type: TensorSpec['elementType']): { dims: number[]; data: number[] } | { path: string; message: string } {
  const dims: number[] = [];
  let probe: unknown = value;
  while (Array.isArray(probe)) {
    dims.push(probe.length);
    if (!probe.length) return { path: '', message: 'an array may not be empty' };
    probe = probe[0];
  }
  if (!dims.length) return { path: '', message: 'expected an array of numbers (or of arrays, one level per dimension)' };
  const data: number[] = [];
  const walk = (v: unknown, axis: number, path: string): { path: string; message: string } | null => {
    if (axis === dims.length) {
      const e = elementOf(type, v);
      if (typeof e === 'string') return { path, message: e };
      data.push(e);
      return null;
    }
    if (!Array.isArray(v) || v.length !== dims[axis]) {
      return { path, message: `expected an array of ${dims[axis]} ${axis === dims.length - 1 ? 'values' : 'arrays'}, like the first one (the tensor must be rectangular)` };
    }
    for (let i = 0; i < v.length; i++) {
      const err = walk(v[i], axis + 1, `${path}.${i}`);
      if (err) return err;
    }
    return null;
  };
  const err = walk(value, 0, '');
  return err ?? { dims, data };
}

const isFixed = (d: TensorSpec['shape'][number]): d is number => typeof d === 'number';
const shapeText = (shape: TensorSpec['shape']) => `[${shape.map((d) => (d === null ? '?' : d)).join(', ')}]`;

/**
 * Serves an ONNX model: each input object maps every declared input name to nested arrays matching its
 * declared shape (a single example may leave out a leading free dimension, e.g. the batch). Outputs come
 * back as nested arrays under the model's output names.
 */
export function onnxRuntime(spec: { inputs: TensorSpec[] }, key: string, host: OnnxHost, loadModel: () => Promise<Uint8Array>): ModelRuntime<OnnxFeed> {
  const names = spec.inputs.map((i) => i.name).join(', ');
  const byName = new Map(spec.inputs.map((i) => [i.name, i]));
  return {
    validate(inputs) {
      const errors: FieldError[] = [];
      const feeds: OnnxFeed[] = [];
      const push = (path: string, message: string) => errors.length < MAX_FIELD_ERRORS && errors.push({ path, message });
      let total = 0;
      inputs.forEach((raw, i) => {
        const input = (raw ?? {}) as Record<string, unknown>;
        const feed: OnnxFeed = {};
        for (const k of Object.keys(input)) if (!byName.has(k)) push(`inputs.${i}.${k}`, `not an input of this model; its inputs are ${names}`);
        for (const declared of spec.inputs) {
          const path = `inputs.${i}.${declared.name}`;
          const value = input[declared.name];
          if (value === undefined) {
            push(path, `required: ${declared.elementType} values shaped ${shapeText(declared.shape)}`);
            continue;
          }
          const flat = flatten(value, declared.elementType);
          if ('message' in flat) {
            push(path + flat.path, flat.message);
            continue;
          }
          let dims = flat.dims;
          const rank = declared.shape.length;
          if (dims.length === rank - 1 && !isFixed(declared.shape[0]!)) dims = [1, ...dims];
          if (dims.length !== rank) {
            push(path, `expected ${rank} dimension(s) shaped ${shapeText(declared.shape)}, got ${flat.dims.length}`);
            continue;
          }
          const bad = declared.shape.findIndex((d, axis) => isFixed(d) && d !== dims[axis]);
          if (bad >= 0) {
            push(path, `dimension ${bad} must be ${declared.shape[bad]} (shape ${shapeText(declared.shape)}), got ${dims[bad]}`);
            continue;
          }
          total += flat.data.length;
          feed[declared.name] = { type: declared.elementType, dims, data: flat.data };
        }
        feeds.push(feed);
      });
      if (!errors.length && total > MAX_ONNX_REQUEST_VALUES) push('inputs', `the request holds ${total} values in all; at most ${MAX_ONNX_REQUEST_VALUES} are allowed`);
      return errors.length ? { ok: false, errors } : { ok: true, inputs: feeds };
    },
    predict: (feeds) => host.run(key, [...feeds], loadModel),
  };
}
