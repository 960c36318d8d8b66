import { runDeliveryBench } from './delivery.bench.ts';

/**
 * `node --no-warnings deploy/bench/services/webhooks/run-delivery.ts [eventsPerSec] [seconds] [endpoints] [receiverDelayMs]`
 * against the running test stack (`bash deploy/local/stack.sh up test`); prints the result as JSON.
 */
const [rate, seconds, endpoints, delay] = process.argv.slice(2).map(Number);
const result = await runDeliveryBench({
  eventsPerSec: rate || 200,
  seconds: seconds || 10,
  endpoints: endpoints || 1,
  receiverDelayMs: delay || 0,
});
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
