import type { ModelRepository } from '../persistence/model.repository.ts';
import type { BuiltinModel, ModelRecord } from './model.ts';
import type { ModelRuntime } from './runtime.ts';

/** Builds runtimes for an account's own models (trained parameters, ONNX sessions). */
export interface RuntimeFactory {
  runtimeFor(accountId: string, model: ModelRecord): Promise<ModelRuntime | null>;
}

const noRuntimes: RuntimeFactory = { runtimeFor: async () => null };

/**
 * The model registry: built-ins (in code, visible to every account) plus each account's own models (in
 * MongoDB). Resolving a built-in touches no database, which keeps the predict hot path short.
 */
export class ModelCatalog {
  private readonly repository: ModelRepository;
  private readonly builtins: readonly BuiltinModel[];
  private readonly builtinById: ReadonlyMap<string, BuiltinModel>;
  private readonly runtimes: RuntimeFactory;

  constructor(opts: { repository: ModelRepository; builtins: readonly BuiltinModel[]; runtimes?: RuntimeFactory }) {
    this.repository = opts.repository;
    this.builtins = [...opts.builtins].sort((a, b) => (a.id < b.id ? 1 : -1));
    this.builtinById = new Map(this.builtins.map((m) => [m.id, m]));
    this.runtimes = opts.runtimes ?? noRuntimes;
  }

  async get(accountId: string, id: string): Promise<ModelRecord | null> {
    return this.builtinById.get(id) ?? (await this.repository.findById(accountId, id));
  }

  /**
   * Newest first by id, below `before`, up to `limit` rows. Built-in ids sort above every real id, so they
   * lead the first page and one keyset cursor continues into the account's models.
   */
  async list(accountId: string, opts: { limit: number; before?: string }): Promise<ModelRecord[]> {
    const before = opts.before;
    const head = this.builtins.filter((m) => before === undefined || m.id < before).slice(0, opts.limit);
    if (head.length >= opts.limit) return head;
    const rest = await this.repository.list(accountId, { limit: opts.limit - head.length, ...(before ? { before } : {}) });
    return [...head, ...rest];
  }

  /** A built-in's runtime at once (no promise to wait on the hot path); an own model's from the factory. */
  runtimeOf(accountId: string, model: ModelRecord): ModelRuntime | Promise<ModelRuntime | null> {
    return this.builtinById.get(model.id)?.runtime ?? this.runtimes.runtimeFor(accountId, model);
  }

  builtin(id: string): BuiltinModel | undefined {
    return this.builtinById.get(id);
  }

  isBuiltin(id: string): boolean {
    return this.builtinById.has(id);
  }

  /** Held-out evaluation: the documented synthetic backtest for built-ins; a trained model's own; null for ONNX. */
  evaluationOf(model: ModelRecord): Record<string, unknown> | null {
    const builtin = this.builtinById.get(model.id);
    return builtin ? builtin.backtest() : (model.evaluation ?? null);
  }
}
