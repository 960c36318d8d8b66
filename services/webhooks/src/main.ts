import { installShutdown } from '@dap/http';
import { createLogger } from '@dap/logger';
import { loadWebhooksConfig } from './config.ts';
import { startWebhooks } from './index.ts';

const config = loadWebhooksConfig();
const logger = createLogger({ name: 'webhooks', level: config.LOG_LEVEL });
const service = await startWebhooks(config, { logger });
installShutdown(logger, service.stop);
