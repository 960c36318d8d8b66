import { installShutdown } from '@dap/http';
import { loadModelsConfig } from './config.ts';
import { startModels } from './index.ts';

const config = loadModelsConfig();
const svc = await startModels(config);
installShutdown(svc.logger, svc.stop);
