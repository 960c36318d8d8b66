import { parentPort } from 'node:worker_threads';
import { downloadToFile } from '../connectors/url-download.ts';
import { toFailure, type WorkerReply, type WorkerRequest } from './download-worker.ts';

/** The download worker thread (see DownloadWorker): runs each download it is sent, until it is cancelled. */
const port = parentPort!;
const running = new Map<number, AbortController>();

port.on('message', (msg: WorkerRequest) => {
  if ('cancel' in msg) {
    running.get(msg.cancel)?.abort(new Error('the download was cancelled'));
    return;
  }
  const controller = new AbortController();
  running.set(msg.id, controller);
  downloadToFile(msg.job, controller.signal)
    .then(
      (result) => port.postMessage({ id: msg.id, result } satisfies WorkerReply),
      (err: unknown) => port.postMessage({ id: msg.id, failure: toFailure(err) } satisfies WorkerReply),
    )
    .finally(() => running.delete(msg.id));
});
port.postMessage({ ready: true });
