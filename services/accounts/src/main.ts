import { installShutdown } from '@dap/http';
import { createLogger } from '@dap/logger';
import { loadAccountsConfig } from './config.ts';
import { startAccounts } from './index.ts';

const config = loadAccountsConfig();
const logger = createLogger({ name: 'accounts', level: config.LOG_LEVEL });
const service = await startAccounts(config, { logger });
installShutdown(logger, service.stop);
