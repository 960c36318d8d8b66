import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parentPort } from 'node:worker_threads';
import { downloadToFile } from '../../domain/connectors/url-download.ts';
import { externalGrowthCollector } from './collector.ts';
import { toFailure, type WorkerReply, type WorkerRequest } from './download-worker.ts';

/**
 * The download worker thread (see DownloadWorker): runs each download it is sent, until it is cancelled.
 *
 * Every piece zlib decodes from a compressed body, and every read slab that a slow sink kept from being
 * reused (http-get's READ_SLAB_BYTES), is a buffer of its own, dead once written, and V8 collects such
 * buffers only when their total has grown by about 64 MB. Until then they stay allocated, and glibc's heap
 * for this thread grows to hold them and keeps the memory (64 MB of a 121 MiB CSV's 446 MB peak, over the
 * 400 MB budget, before this collection). A young-generation collection each time they have grown by 4 MiB
 * (collector.ts) frees them while they are few. `gc` is V8's own function, taken from a context made while
 * --expose-gc is on; only this thread uses it.
 */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (options: { type: 'minor' | 'major' }) => void;
setFlagsFromString('--no-expose-gc');
const collect = externalGrowthCollector(() => gc({ type: 'minor' }));

const port = parentPort!;
const running = new Map<number, AbortController>();

port.on('message', (msg: WorkerRequest) => {
  if ('cancel' in msg) {
    running.get(msg.cancel)?.abort(new Error('the download was cancelled'));
    return;
  }
  const controller = new AbortController();
  running.set(msg.id, controller);
  downloadToFile(msg.job, controller.signal, collect)
    .then(
      (result) => port.postMessage({ id: msg.id, result } satisfies WorkerReply),
      (err: unknown) => port.postMessage({ id: msg.id, failure: toFailure(err) } satisfies WorkerReply),
    )
    .finally(() => running.delete(msg.id));
});
port.postMessage({ ready: true });
