import { kafkaSettingsOf } from '@dap/config';
import type { Lifecycle } from '@dap/lifecycle';
import type { Logger } from '@dap/logger';
import { connectEventing, type Eventing } from './index.ts';

/** A service's Kafka topics and producer, opened through its lifecycle (so a failed start-up or stop() closes them). */
export function openEventing(life: Lifecycle, config: Parameters<typeof kafkaSettingsOf>[0], logger: Logger): Promise<Eventing> {
  return life.open(
    'kafka',
    () => connectEventing(kafkaSettingsOf(config), logger),
    (e) => e.close(),
  );
}
