import { installShutdown } from '@dap/http';
import { createLogger } from '@dap/logger';
import { loadGatewayConfig } from './config.ts';
import { dashboardRoutes } from './dashboard/dashboard.routes.ts';
import { startGateway } from './index.ts';

const config = loadGatewayConfig();
const logger = createLogger({ name: 'gateway', level: config.LOG_LEVEL });
const gateway = await startGateway(config, { logger, extraRoutes: dashboardRoutes({ dir: config.DASHBOARD_DIR, logger }) });
installShutdown(logger, gateway.stop);
