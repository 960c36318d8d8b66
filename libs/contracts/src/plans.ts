import { z } from 'zod';
import { PLANS, SCOPES } from './lists.ts';

export { PLANS, PLAN_LIMITS, SCOPES } from './lists.ts';

export const planSchema = z.enum(PLANS);
export type Plan = z.infer<typeof planSchema>;
export const scopeSchema = z.enum(SCOPES);
export type Scope = z.infer<typeof scopeSchema>;
