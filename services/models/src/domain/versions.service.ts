import type { ModelVersionDto, UpdateAliasesBody } from '@dap/contracts';
import type { FieldError } from '@dap/errors';
import type { ModelVersionDoc, ModelVersionRepository } from '../persistence/model-version.repository.ts';
import type { ModelDoc, ModelRepository } from '../persistence/model.repository.ts';
import { aliasesChanged, aliasNotFound, builtinNotVersioned, invalidBody, modelNotFound, versionNotFound, versionNotReady } from './errors.ts';
import { DEFAULT_ALIASES, PRODUCTION, type ModelRecord, type ModelStatus } from './model.ts';

/** Which version a request means: a number, an alias, or (neither) `production`. */
export interface VersionSelector {
  version?: number | undefined;
  alias?: string | undefined;
}

/** Versions listed at most (they are few: one per retraining). */
const MAX_VERSIONS_LISTED = 1000;
/** Alias writes retried when another change got in between the read and the write. */
const ALIAS_WRITE_ATTEMPTS = 3;

/**
 * A model's versions and aliases. The model document holds the latest version and the alias map; earlier
 * versions are snapshots in `model_versions`. A model from before versions (no alias map) is version 1
 * with `production` → 1, read that way without rewriting it.
 */
export class ModelVersions {
  private readonly models: ModelRepository;
  private readonly versions: ModelVersionRepository;

  constructor(opts: { models: ModelRepository; versions: ModelVersionRepository }) {
    this.models = opts.models;
    this.versions = opts.versions;
  }

  /**
   * The model as of the selected version. The latest version costs no read (the record already is it),
   * so a model whose `production` is its latest version serves from one query. `find` reads an earlier
   * version (predict passes its cache's).
   */
  async resolve(
    accountId: string,
    latest: ModelRecord,
    selector: VersionSelector,
    find: (version: number) => Promise<ModelVersionDoc | null> = (version) => this.find(accountId, latest.id, version),
  ): Promise<{ model: ModelRecord; alias: string | null }> {
    const alias = selector.version === undefined ? (selector.alias ?? PRODUCTION) : null;
    const aliases = latest.aliases ?? DEFAULT_ALIASES;
    const version = selector.version ?? aliases[alias!];
    if (version === undefined) throw aliasNotFound(alias!, Object.keys(aliases));
    if (version === latest.version) return { model: latest, alias };
    if (latest.kind === 'builtin' || version > latest.version) throw versionNotFound(version, latest.version);
    const v = await find(version);
    if (!v) throw versionNotFound(version, latest.version);
    const model: ModelRecord = { ...latest, version, status: v.status, error: v.error, features: v.features, evaluation: v.evaluation, profile: v.profile };
    if (v.training) model.training = v.training;
    else delete model.training;
    if (v.onnx) model.onnx = v.onnx;
    return { model, alias };
  }

  /** An earlier version's snapshot. */
  find(accountId: string, id: string, version: number): Promise<ModelVersionDoc | null> {
    return this.versions.find(accountId, id, version);
  }

  /** Every version, newest first, with the aliases pointing at each. */
  async list(accountId: string, latest: ModelRecord): Promise<ModelVersionDto[]> {
    const aliases = latest.aliases ?? DEFAULT_ALIASES;
    const namesOf = (version: number) =>
      Object.entries(aliases)
        .filter(([, v]) => v === version)
        .map(([name]) => name)
        .sort();
    const older = latest.kind === 'builtin' ? [] : await this.versions.list(accountId, latest.id, MAX_VERSIONS_LISTED);
    const head = {
      version: latest.version,
      status: latest.status,
      error: latest.error ?? null,
      training: latest.training ?? null,
      evaluation: latest.evaluation ?? null,
      createdAt: latest.training?.startedAt ?? latest.createdAt,
    };
    return [head, ...older.filter((v) => v.version < latest.version)].map((v) => ({
      version: v.version,
      status: v.status,
      error: v.error,
      aliases: namesOf(v.version),
      training: v.training
        ? {
            ...v.training,
            startedAt: v.training.startedAt.toISOString(),
            finishedAt: v.training.finishedAt ? v.training.finishedAt.toISOString() : null,
          }
        : null,
      evaluation: v.evaluation,
      createdAt: v.createdAt.toISOString(),
    }));
  }

  /**
   * Moves and removes aliases in one write of the whole map, so a promotion (`production` → the candidate's
   * version, `candidate` removed) is seen entirely or not at all. Only existing, ready versions can be
   * pointed at.
   */
  async setAliases(accountId: string, id: string, builtin: boolean, body: UpdateAliasesBody): Promise<{ aliases: Record<string, number>; shadowShare: number }> {
    if (builtin) throw builtinNotVersioned();
    for (let attempt = 0; attempt < ALIAS_WRITE_ATTEMPTS; attempt++) {
      const doc = await this.models.findDoc(accountId, id);
      if (!doc) throw modelNotFound();
      const next: Record<string, number> = { ...(doc.aliases ?? DEFAULT_ALIASES) };
      const missing: FieldError[] = [];
      const notReady: string[] = [];
      for (const [name, version] of Object.entries(body.aliases)) {
        if (version === null) {
          delete next[name];
          continue;
        }
        const status = await this.statusOf(accountId, doc, version);
        if (!status) missing.push({ path: `aliases.${name}`, message: `the model has no version ${version} (its latest is ${doc.version})` });
        else if (status !== 'ready') notReady.push(`version ${version} is ${status}`);
        else next[name] = version;
      }
      if (missing.length) throw invalidBody(missing);
      if (notReady.length) throw versionNotReady(notReady);
      const shadowShare = body.shadowShare ?? doc.shadowShare ?? 0;
      const written = await this.models.setAliases(accountId, id, next, shadowShare, doc.aliasesRev);
      if (written) return { aliases: { ...(written.aliases ?? next) }, shadowShare };
    }
    throw aliasesChanged();
  }

  /** A deleted model's earlier versions. */
  removeAll(accountId: string, id: string): Promise<void> {
    return this.versions.removeAll(accountId, id);
  }

  private async statusOf(accountId: string, doc: ModelDoc, version: number): Promise<ModelStatus | null> {
    if (version === doc.version) return doc.status;
    if (version > doc.version) return null;
    return (await this.versions.find(accountId, doc._id, version))?.status ?? null;
  }
}
