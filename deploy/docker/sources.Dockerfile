# syntax=docker/dockerfile:1
# The sources image. Build from the repository root: docker build -f deploy/docker/sources.Dockerfile -t dap/sources .
# Every deployable's Dockerfile has these stages with its own name and directory (the gateway adds the
# dashboard; test/deploy/docker.test.ts holds them to that); the shared steps live in workspaces.ts beside
# them. Node 24 runs the TypeScript sources directly (type stripping), so there is no build step.

FROM node:24-slim AS source
WORKDIR /src
COPY . .
RUN node --no-warnings deploy/docker/workspaces.ts prepare services/sources /out

# Only the manifests reach this stage, so the install layer is rebuilt only when a dependency changes.
# `npm ci` of this deployable's workspace: exactly what the lock pins, production dependencies only.
# --ignore-scripts is safe: DuckDB's binary is a per-platform optional package and onnxruntime-node ships its
# CPU binaries (its script fetches CUDA extras).
FROM node:24-slim AS deps
WORKDIR /app
COPY --from=source /out/manifests/ ./
COPY --from=source /src/deploy/docker/workspaces.ts /opt/dap/workspaces.ts
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund -w @dap/sources \
 && node --no-warnings /opt/dap/workspaces.ts slim node_modules

FROM node:24-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
WORKDIR /app
# Owned by root and read-only to the process; only the dataset directory and DuckDB's spill directory are writable.
COPY --from=deps /app ./
COPY --from=source /out/app ./
RUN mkdir -p /data/datasets /var/tmp/duckdb && chown node:node /data/datasets /var/tmp/duckdb
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+process.env.PORT+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "--no-warnings", "--min-semi-space-size=16", "--max-semi-space-size=16", "services/sources/src/main.ts"]
