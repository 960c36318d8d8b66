import { installShutdown } from '@dap/http';
import { createLogger } from '@dap/logger';
import { loadSourcesConfig } from './config.ts';
import { startSources } from './index.ts';

const config = loadSourcesConfig();
const logger = createLogger({ name: 'sources', level: config.LOG_LEVEL });
const svc = await startSources(config, { logger });
installShutdown(logger, svc.stop);
