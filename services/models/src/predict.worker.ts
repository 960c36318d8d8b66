import { parentPort } from 'node:worker_threads';
import { BUILTIN_MODELS } from './domain/builtin/index.ts';

/**
 * Runs built-in models off the main event loop for large batches. It receives inputs already validated by
 * the main thread, so it only computes. Started by PredictWorkerPool through the package's
 * `@dap/models/predict-worker` export.
 */
export interface WorkerRequest {
  id: number;
  modelId: string;
  inputs: unknown[];
}
export type WorkerResponse = { id: number; ok: true; outputs: Record<string, unknown>[] } | { id: number; ok: false; error: string };

const models = new Map(BUILTIN_MODELS.map((m) => [m.id, m]));
const port = parentPort;

if (port) {
  port.on('message', async (msg: WorkerRequest) => {
    let reply: WorkerResponse;
    try {
      const model = models.get(msg.modelId);
      if (!model) throw new Error(`no built-in model ${msg.modelId} in the worker`);
      reply = { id: msg.id, ok: true, outputs: await model.runtime.predict(msg.inputs) };
    } catch (err) {
      reply = { id: msg.id, ok: false, error: (err as Error).message };
    }
    port.postMessage(reply);
  });
  port.postMessage({ ready: true });
}
