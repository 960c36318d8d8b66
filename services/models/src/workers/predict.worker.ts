import { BUILTIN_MODELS } from '../domain/builtin/index.ts';
import { OnnxEngine, type OnnxFeed, type OnnxInspection, type NestedValues } from '../domain/onnx/onnx-engine.ts';
import { serveJobs, type JobContext } from './protocol.ts';

/**
 * The prediction worker: large built-in batches, and every ONNX model (verification at upload, then
 * inference). Inputs arrive validated by the main thread, so it only computes. Started by a WorkerPool
 * through the package's `@dap/models/predict-worker` export.
 */
export type PredictJob =
  | { kind: 'builtin'; modelId: string; inputs: unknown[] }
  | { kind: 'onnx-inspect'; model: Uint8Array }
  /** `model` is sent only when the worker answered `missing` (it has no session under `key` yet). */
  | { kind: 'onnx-run'; key: string; model?: Uint8Array; feeds: OnnxFeed[] };

export type PredictJobResult =
  | { kind: 'builtin'; outputs: Record<string, unknown>[] }
  | { kind: 'onnx-inspect'; inspection: OnnxInspection }
  | { kind: 'onnx-run'; missing: true }
  | { kind: 'onnx-run'; missing: false; outputs: Record<string, NestedValues>[] };

const models = new Map(BUILTIN_MODELS.map((m) => [m.id, m]));
const engine = new OnnxEngine();

async function handle(job: PredictJob, ctx: JobContext): Promise<PredictJobResult> {
  switch (job.kind) {
    case 'builtin': {
      const model = models.get(job.modelId);
      if (!model) throw new Error(`no built-in model ${job.modelId} in the worker`);
      return { kind: 'builtin', outputs: await model.runtime.predict(job.inputs) };
    }
    // onnxruntime works asynchronously in native code: the pool must not terminate this thread meanwhile.
    case 'onnx-inspect':
      return { kind: 'onnx-inspect', inspection: await ctx.native(() => engine.inspect(job.model)) };
    case 'onnx-run': {
      if (!engine.has(job.key) && !job.model) return { kind: 'onnx-run', missing: true };
      const model = job.model;
      const outputs = await ctx.native(async () => {
        if (!engine.has(job.key) && model) await engine.load(job.key, model);
        return engine.run(job.key, job.feeds);
      });
      return { kind: 'onnx-run', missing: false, outputs };
    }
  }
}

// Every failure here is about the caller's model or inputs (onnxruntime's own messages), never a secret.
serveJobs(handle, () => true);
