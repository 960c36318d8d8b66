import { installShutdown } from '@dap/http';
import { createLogger } from '@dap/logger';
import { loadAnalyticsConfig } from './config.ts';
import { startAnalytics } from './index.ts';

const config = loadAnalyticsConfig();
const logger = createLogger({ name: 'analytics', level: config.LOG_LEVEL });
const service = await startAnalytics(config, { logger });
installShutdown(logger, service.stop);
