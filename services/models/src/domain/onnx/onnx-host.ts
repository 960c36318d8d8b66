import type { PredictJob, PredictJobResult } from '../../workers/predict.worker.ts';
import { WorkerJobError, WorkerTimeoutError, type WorkerPool } from '../../workers/worker-pool.ts';
import { OnnxEngine, type NestedValues, type OnnxFeed, type OnnxInspection } from './onnx-engine.ts';
import type { OnnxHost } from './onnx-runtime.ts';
import { onnxFailed, onnxTimedOut } from '../errors.ts';

/** An ONNX failure caused by the caller's model or inputs: 422 with onnxruntime's reason. */
export class OnnxModelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OnnxModelError';
  }
}

function asDomainError(err: unknown, timeoutMs: number): unknown {
  if (err instanceof WorkerTimeoutError) return onnxTimedOut(timeoutMs);
  if (err instanceof WorkerJobError || err instanceof OnnxModelError) return onnxFailed(err.message);
  return err;
}

/** Runs ONNX on the prediction worker threads; each keeps its own sessions and asks for a model it lacks. */
export class WorkerOnnxHost implements OnnxHost {
  private readonly pool: WorkerPool<PredictJob, PredictJobResult>;
  private readonly timeoutMs: number;

  constructor(pool: WorkerPool<PredictJob, PredictJobResult>, timeoutMs: number) {
    this.pool = pool;
    this.timeoutMs = timeoutMs;
  }

  async inspect(model: Uint8Array): Promise<OnnxInspection> {
    let result: PredictJobResult;
    try {
      result = await this.pool.run({ kind: 'onnx-inspect', model }, { timeoutMs: 30_000 });
    } catch (err) {
      if (err instanceof WorkerJobError) throw new OnnxModelError(err.message);
      if (err instanceof WorkerTimeoutError) throw new OnnxModelError('loading the model took longer than 30 s');
      throw err;
    }
    if (result.kind !== 'onnx-inspect') throw new Error('unexpected worker answer');
    return result.inspection;
  }

  async run(key: string, feeds: OnnxFeed[], loadModel: () => Promise<Uint8Array>): Promise<Record<string, NestedValues>[]> {
    try {
      let result = await this.pool.run({ kind: 'onnx-run', key, feeds }, { timeoutMs: this.timeoutMs });
      if (result.kind === 'onnx-run' && result.missing) {
        result = await this.pool.run({ kind: 'onnx-run', key, feeds, model: await loadModel() }, { timeoutMs: this.timeoutMs });
      }
      if (result.kind !== 'onnx-run' || result.missing) throw new Error('unexpected worker answer');
      return result.outputs;
    } catch (err) {
      throw asDomainError(err, this.timeoutMs);
    }
  }
}

/** Runs ONNX on this thread: for an instance without prediction workers (onnxruntime runs natively anyway). */
export class InlineOnnxHost implements OnnxHost {
  private readonly engine = new OnnxEngine();

  async inspect(model: Uint8Array): Promise<OnnxInspection> {
    try {
      return await this.engine.inspect(model);
    } catch (err) {
      throw new OnnxModelError((err as Error).message);
    }
  }

  async run(key: string, feeds: OnnxFeed[], loadModel: () => Promise<Uint8Array>): Promise<Record<string, NestedValues>[]> {
    if (!this.engine.has(key)) {
      const model = await loadModel();
      await this.engine.load(key, model).catch((err: Error) => {
        throw asDomainError(new OnnxModelError(err.message), 0);
      });
    }
    try {
      return await this.engine.run(key, feeds);
    } catch (err) {
      throw asDomainError(new OnnxModelError((err as Error).message), 0);
    }
  }
}
