import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadConfig, uploadConfig } from '@dap/config';
import { repoRoot } from '@dap/testing';
import { renderKustomization, strategicMerge, type K8sObject } from '../../deploy/k8s/render.ts';
import { DATASET_USERS, DATASET_WRITER, knownEnv, NAMES, SHAPES } from './deployables.ts';

/**
 * deploy/k8s, checked offline: the base and the example overlay are rendered (deploy/k8s/render.ts, and
 * the real kustomize where Go can build it), every object is validated against the Kubernetes API schemas
 * (deploy/k8s/validate.ts, on the npm package kubernetes-models), and the Deployments are held to each
 * service's config schema: env names, the values the ConfigMap and Secret give them, ports and probes.
 */
const root = repoRoot();
const BASE = join(root, 'deploy/k8s/base');
const OVERLAY = join(root, 'deploy/k8s/overlays/example');
const base = renderKustomization(BASE);
const overlay = renderKustomization(OVERLAY);

type Env = { name: string; value?: string; valueFrom?: { configMapKeyRef?: { name: string; key: string }; secretKeyRef?: { name: string; key: string } } };
type Probe = { httpGet?: { path: string; port: string | number } };
type Container = {
  name: string;
  image: string;
  ports: Array<{ name: string; containerPort: number }>;
  env: Env[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
};
type PodSpec = {
  containers: Container[];
  securityContext?: Record<string, unknown>;
  volumes?: Array<{ name: string; persistentVolumeClaim?: { claimName: string; readOnly?: boolean } }>;
};
type Deployment = K8sObject & {
  spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec };
  };
};
type Service = K8sObject & { spec: { selector: Record<string, string>; ports: Array<{ port: number; targetPort: string | number }> } };
type LabelSelector = { matchLabels?: Record<string, string>; matchExpressions?: Array<{ key: string; operator: string; values?: string[] }> };
type NetworkPolicy = K8sObject & {
  spec: {
    podSelector: LabelSelector;
    policyTypes: string[];
    ingress?: Array<{ from?: Array<{ podSelector?: LabelSelector; namespaceSelector?: LabelSelector }>; ports?: Array<{ port: number }> }>;
  };
};

const TOPIC_KEYS = ['EVENTS', 'DLQ'].flatMap((f) => ['PARTITIONS', 'REPLICATION_FACTOR', 'MIN_INSYNC_REPLICAS'].map((k) => `KAFKA_${f}_${k}`));
const find = <T extends K8sObject>(objects: K8sObject[], kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name) as T | undefined;
const ofKind = <T extends K8sObject>(objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind) as T[];

function matches(selector: LabelSelector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    if (e.operator === 'In' && !e.values!.includes(labels[e.key]!)) return false;
    if (e.operator === 'NotIn' && e.values!.includes(labels[e.key]!)) return false;
    if (e.operator === 'Exists' && !(e.key in labels)) return false;
  }
  return true;
}

/** The env a container gets, with ConfigMap and Secret references resolved from the rendered objects. */
function resolvedEnv(objects: K8sObject[], c: Container): Record<string, string> {
  const config = find<K8sObject & { data: Record<string, string> }>(objects, 'ConfigMap', 'dap-config')!.data;
  const secret = find<K8sObject & { stringData: Record<string, string> }>(objects, 'Secret', 'dap-secrets')!.stringData;
  return Object.fromEntries(
    c.env.map((e) => {
      if (e.value !== undefined) return [e.name, String(e.value)];
      const cm = e.valueFrom?.configMapKeyRef;
      const sk = e.valueFrom?.secretKeyRef;
      const value = cm ? (cm.name === 'dap-config' ? config[cm.key] : undefined) : sk ? (sk.name === 'dap-secrets' ? secret[sk.key] : undefined) : undefined;
      if (value === undefined) throw new Error(`${c.name}: ${e.name} refers to a key that does not exist`);
      return [e.name, value];
    }),
  );
}

describe.each([
  ['base', base],
  ['overlays/example', overlay],
])('deploy/k8s/%s', (_label, objects) => {
  describe.each(NAMES)('%s', (name) => {
    const deployment = find<Deployment>(objects, 'Deployment', name)!;
    const container = () => deployment.spec.template.spec.containers.find((c) => c.name === name)!;

    it('has a Deployment whose selector picks its own pods, a Service onto its http port, and a PodDisruptionBudget', () => {
      expect(deployment).toBeDefined();
      expect(deployment.spec.selector.matchLabels).toEqual({ 'app.kubernetes.io/name': name });
      expect(deployment.spec.template.metadata.labels).toMatchObject({ 'app.kubernetes.io/name': name, 'app.kubernetes.io/part-of': 'dap' });
      const svc = find<Service>(objects, 'Service', name)!;
      expect(svc.spec.selector).toEqual({ 'app.kubernetes.io/name': name });
      expect(svc.spec.ports.map((p) => p.targetPort)).toEqual(['http']);
      expect(svc.spec.ports[0]!.port).toBe(name === 'gateway' ? 80 : 8080);
      const pdb = find<K8sObject & { spec: { selector: LabelSelector; maxUnavailable?: number; minAvailable?: number } }>(objects, 'PodDisruptionBudget', name)!;
      expect(matches(pdb.spec.selector, deployment.spec.template.metadata.labels)).toBe(true);
      expect(pdb.spec.maxUnavailable ?? pdb.spec.minAvailable).toBeDefined();
    });

    it('runs its image on the port its config reads, with readiness on /readyz and liveness on /healthz', () => {
      const c = container();
      expect(c.image).toMatch(new RegExp(`(^|/)dap/${name}:[\\w.-]+$`));
      const env = resolvedEnv(objects, c);
      expect(c.ports).toEqual([
        { name: 'http', containerPort: Number(env.PORT), protocol: 'TCP' },
        { name: 'metrics', containerPort: Number(env.METRICS_PORT), protocol: 'TCP' },
      ]);
      expect(env.METRICS_PORT).not.toBe(env.PORT);
      expect(env.HOST).toBe('0.0.0.0');
      expect(c.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
      expect(c.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
      expect(c.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    });

    it('is scraped on its metrics port, which no Service exposes', () => {
      const env = resolvedEnv(objects, container());
      expect(deployment.spec.template.metadata.annotations).toEqual({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': env.METRICS_PORT, 'prometheus.io/path': '/metrics' });
      const exposed = ofKind<Service>(objects, 'Service').flatMap((svc) => svc.spec.ports.flatMap((p) => [p.targetPort, p.port]));
      expect(exposed).toContain('http'); // positive control
      expect(exposed.filter((p) => p === 'metrics' || p === Number(env.METRICS_PORT))).toEqual([]);
    });

    it('sets only env names its config schema knows, with values its config parser accepts', () => {
      const c = container();
      expect(c.env.map((e) => e.name).filter((n) => !knownEnv(name).has(n))).toEqual([]);
      expect(new Set(c.env.map((e) => e.name)).size).toBe(c.env.length);
      expect(() => loadConfig(SHAPES[name]!, resolvedEnv(objects, c))).not.toThrow();
    });

    it('requests and limits CPU and memory, and runs unprivileged on a read-only root', () => {
      const c = container();
      expect(Object.keys(c.resources?.requests ?? {}).sort()).toEqual(['cpu', 'memory']);
      expect(Object.keys(c.resources?.limits ?? {}).sort()).toEqual(['cpu', 'memory']);
      expect(deployment.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
      expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    });

    it('mounts the dataset store where its config reads it: read-write for the writer, read-only for readers', () => {
      const c = container();
      const mount = c.volumeMounts?.find((m) => m.name === 'datasets');
      const volume = deployment.spec.template.spec.volumes?.find((v) => v.name === 'datasets');
      if (!DATASET_USERS.includes(name)) {
        expect(mount).toBeUndefined();
        return;
      }
      const readOnly = name !== DATASET_WRITER;
      expect(mount).toEqual({ name: 'datasets', mountPath: resolvedEnv(objects, c).DATASET_DIR, readOnly });
      expect(volume?.persistentVolumeClaim).toEqual({ claimName: 'dap-datasets', readOnly });
    });
  });

  it('gives every DuckDB user an emptyDir to spill to, larger than what DuckDB may spill', () => {
    const bytes = (q: string) => {
      const m = /^(\d+(?:\.\d+)?)\s*([KMGT])i?B?$/i.exec(q)!;
      return Number(m[1]) * 1024 ** ' KMGT'.indexOf(m[2]!.toUpperCase());
    };
    const users = NAMES.filter((n) => knownEnv(n).has('DUCKDB_TEMP_DIR'));
    expect(users.sort()).toEqual(['analytics', 'models', 'sources']);
    for (const name of users) {
      const spec = find<Deployment>(objects, 'Deployment', name)!.spec.template.spec;
      const c = spec.containers[0]!;
      const env = resolvedEnv(objects, c);
      const mount = c.volumeMounts?.find((m) => m.mountPath === env.DUCKDB_TEMP_DIR);
      expect(mount?.readOnly).toBeFalsy();
      const volume = (spec.volumes as Array<{ name: string; emptyDir?: { sizeLimit?: string } }>).find((v) => v.name === mount?.name);
      expect(volume?.emptyDir?.sizeLimit).toBeDefined();
      expect(bytes(env.DUCKDB_MAX_TEMP_SIZE!)).toBeLessThan(bytes(volume!.emptyDir!.sizeLimit!));
    }
  });

  it('scales the gateway and models with HorizontalPodAutoscalers, which own their replica counts', () => {
    const hpas = ofKind<K8sObject & { spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number } }>(objects, 'HorizontalPodAutoscaler');
    for (const name of ['gateway', 'models']) {
      const hpa = hpas.find((h) => h.spec.scaleTargetRef.name === name)!;
      expect(hpa.spec.scaleTargetRef.kind).toBe('Deployment');
      expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
      expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
      expect(find<Deployment>(objects, 'Deployment', name)!.spec.replicas).toBeUndefined();
    }
  });

  it('believes X-Forwarded-For only behind a proxy every request passes: none in the base, the Ingress in the overlay', () => {
    const env = resolvedEnv(objects, find<Deployment>(objects, 'Deployment', 'gateway')!.spec.template.spec.containers[0]!);
    expect(env.TRUST_PROXY).toBe(_label === 'base' ? '' : '1');
    expect(loadConfig({ TRUST_PROXY: SHAPES.gateway!.TRUST_PROXY! }, env).TRUST_PROXY).toBe(_label === 'base' ? false : 1);
  });

  it('points the gateway at every service by its Service name and port', () => {
    const gw = find<Deployment>(objects, 'Deployment', 'gateway')!.spec.template.spec.containers[0]!;
    const env = resolvedEnv(objects, gw);
    for (const name of NAMES.filter((n) => n !== 'gateway')) {
      const svc = find<Service>(objects, 'Service', name)!;
      expect(env[`${name.toUpperCase()}_URL`]).toBe(`http://${name}:${svc.spec.ports[0]!.port}`);
    }
  });

  it('claims a ReadWriteMany volume for the dataset store', () => {
    const pvc = find<K8sObject & { spec: { accessModes: string[] } }>(objects, 'PersistentVolumeClaim', 'dap-datasets')!;
    expect(pvc.spec.accessModes).toEqual(['ReadWriteMany']);
  });

  it('ships placeholders, never real secrets', () => {
    const secret = find<K8sObject & { stringData: Record<string, string> }>(objects, 'Secret', 'dap-secrets')!;
    for (const [key, value] of Object.entries(secret.stringData)) {
      if (value === '') continue; // an optional setting left unset (SASL, a Sentinel password): nothing to leak
      const text = /^[A-Za-z0-9+/]+={0,2}$/.test(value) && !value.includes('REPLACE') ? Buffer.from(value, 'base64').toString('utf8') : value;
      expect(`${key}=${text}`).toMatch(/REPLACE-ME/);
    }
  });

  it('wires Kafka TLS, SASL and the topic layout into every Deployment, the SASL credentials from the Secret', () => {
    const fromConfig = ['KAFKA_SSL', 'KAFKA_SASL_MECHANISM', ...TOPIC_KEYS];
    for (const name of NAMES) {
      const env = find<Deployment>(objects, 'Deployment', name)!.spec.template.spec.containers.find((c) => c.name === name)!.env;
      const ref = (key: string) => env.find((e) => e.name === key)?.valueFrom;
      for (const key of fromConfig) expect([name, ref(key)]).toEqual([name, { configMapKeyRef: { name: 'dap-config', key } }]);
      for (const key of ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD']) expect([name, ref(key)]).toEqual([name, { secretKeyRef: { name: 'dap-secrets', key } }]);
    }
  });

  it('lays topics out for 3 brokers, with event partitions enough for the largest consumer group', () => {
    const config = find<K8sObject & { data: Record<string, string> }>(objects, 'ConfigMap', 'dap-config')!.data;
    for (const family of ['EVENTS', 'DLQ']) {
      expect([config[`KAFKA_${family}_REPLICATION_FACTOR`], config[`KAFKA_${family}_MIN_INSYNC_REPLICAS`]]).toEqual(['3', '2']);
    }
    const hpas = ofKind<K8sObject & { spec: { maxReplicas: number } }>(objects, 'HorizontalPodAutoscaler');
    expect(hpas.length).toBeGreaterThan(0);
    const most = Math.max(...hpas.map((h) => h.spec.maxReplicas), ...ofKind<Deployment>(objects, 'Deployment').map((d) => d.spec.replicas ?? 1));
    expect(Number(config.KAFKA_EVENTS_PARTITIONS)).toBeGreaterThanOrEqual(most);
  });

  it('lets the gateway reach Redis through Sentinel: the Sentinels from the ConfigMap, their password from the Secret', () => {
    const gw = find<Deployment>(objects, 'Deployment', 'gateway')!.spec.template.spec.containers.find((c) => c.name === 'gateway')!;
    const ref = (key: string) => gw.env.find((e) => e.name === key)?.valueFrom;
    expect(ref('REDIS_SENTINELS')).toEqual({ configMapKeyRef: { name: 'dap-config', key: 'REDIS_SENTINELS' } });
    expect(ref('REDIS_SENTINEL_NAME')).toEqual({ configMapKeyRef: { name: 'dap-config', key: 'REDIS_SENTINEL_NAME' } });
    expect(ref('REDIS_SENTINEL_PASSWORD')).toEqual({ secretKeyRef: { name: 'dap-secrets', key: 'REDIS_SENTINEL_PASSWORD' } });
    // An operator who fills them in gets a configuration the gateway accepts.
    const env = { ...resolvedEnv(objects, gw), REDIS_SENTINELS: 's1:26379,s2:26379,s3:26379', REDIS_SENTINEL_NAME: 'dap', REDIS_SENTINEL_PASSWORD: 'x' };
    expect(() => loadConfig(SHAPES.gateway!, env)).not.toThrow();
  });

  it('lets traffic reach only the gateway from outside, the services only from the gateway, and metrics only from monitoring', () => {
    const policies = ofKind<NetworkPolicy>(objects, 'NetworkPolicy');
    const pods = Object.fromEntries(NAMES.map((n) => [n, find<Deployment>(objects, 'Deployment', n)!.spec.template.metadata.labels]));
    // Who may connect to a pod's port: '*' (anyone), pod names, or `ns:<name>` for a whole namespace.
    const allowed = (name: string, port: number) => {
      const applying = policies.filter((p) => p.spec.policyTypes.includes('Ingress') && matches(p.spec.podSelector, pods[name]!));
      expect(applying.length).toBeGreaterThan(0); // isolated: nothing not allowed below gets in
      const peers = new Set<string>();
      for (const p of applying) {
        for (const rule of p.spec.ingress ?? []) {
          expect(rule.ports?.length).toBeGreaterThan(0); // a rule without ports opens every port
          if (!rule.ports!.some((x) => x.port === port)) continue;
          if (!rule.from?.length) peers.add('*');
          for (const peer of rule.from ?? []) {
            if (peer.namespaceSelector) peers.add(`ns:${peer.namespaceSelector.matchLabels?.['kubernetes.io/metadata.name']}`);
            else for (const other of NAMES) if (matches(peer.podSelector!, pods[other]!)) peers.add(other);
          }
        }
      }
      return [...peers].sort();
    };
    // The API port from outside (gateway) or from the gateway (services); the metrics port from monitoring only.
    // Behind the example's Ingress, which the gateway trusts for X-Forwarded-For, only the ingress controller.
    expect(allowed('gateway', 8080)).toEqual(_label === 'base' ? ['*'] : ['ns:ingress-nginx']);
    for (const name of NAMES.filter((n) => n !== 'gateway')) expect(allowed(name, 8080)).toEqual(['gateway']);
    for (const name of NAMES) expect(allowed(name, 9464)).toEqual(['ns:monitoring']);
  });
});

describe('the example overlay', () => {
  it('puts everything in its namespace and pins images to its registry', () => {
    expect(find(overlay, 'Namespace', 'dap')).toBeDefined();
    for (const o of overlay.filter((x) => x.kind !== 'Namespace')) expect(o.metadata.namespace).toBe('dap');
    for (const name of NAMES) {
      expect(find<Deployment>(overlay, 'Deployment', name)!.spec.template.spec.containers[0]!.image).toBe(`registry.example.com/dap/${name}:1.0.0`);
    }
  });

  it('exposes the gateway Service, and only it, through its Ingress', () => {
    const ingresses = ofKind<K8sObject & { spec: { rules: Array<{ http: { paths: Array<{ backend: { service: { name: string } } }> } }> } }>(overlay, 'Ingress');
    const backends = new Set(ingresses.flatMap((i) => i.spec.rules.flatMap((r) => r.http.paths.map((p) => p.backend.service.name))));
    expect([...backends]).toEqual(['gateway']);
  });

  it("lets file uploads through the Ingress whole and streamed: its body cap is at least the gateway's upload limit, no buffering", () => {
    const ingress = ofKind<K8sObject & { metadata: { annotations?: Record<string, string> } }>(overlay, 'Ingress')[0]!;
    const notes = ingress.metadata.annotations ?? {};
    const size = /^(\d+)([kmg]?)$/i.exec(notes['nginx.ingress.kubernetes.io/proxy-body-size'] ?? '');
    expect(size).not.toBeNull();
    const bytes = Number(size![1]) * 1024 ** ' kmg'.indexOf((size![2] || ' ').toLowerCase());
    expect(bytes).toBeGreaterThanOrEqual(loadConfig(uploadConfig, {}).UPLOAD_LIMIT_BYTES);
    expect(notes['nginx.ingress.kubernetes.io/proxy-request-buffering']).toBe('off');
  });

  it('patches by strategic merge: containers and env merge by name, other lists are replaced', () => {
    const analytics = find<Deployment>(overlay, 'Deployment', 'analytics')!.spec.template.spec.containers[0]!;
    expect(analytics.env.find((e) => e.name === 'DUCKDB_MEMORY_LIMIT')?.value).toBe('3GB');
    expect(analytics.env.find((e) => e.name === 'MONGO_URL')).toBeDefined();
    expect(analytics.readinessProbe).toBeDefined();
    expect(strategicMerge({ a: [1, 2], b: { c: 1, d: 2 } }, { a: [3], b: { d: null } })).toEqual({ a: [3], b: { c: 1 } });
  });
});

describe('validation against the Kubernetes API schemas (npm kubernetes-models)', () => {
  const validate = (...args: string[]) => {
    const r = spawnSync(process.execPath, ['--no-warnings', join(root, 'deploy/k8s/validate.ts'), ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    return { status: r.status, result: JSON.parse(r.stdout.trim().split('\n').pop() || '{}') as { objects: number; errors: string[] } };
  };

  it('accepts every object of the base and the example overlay', () => {
    const { status, result } = validate(BASE, OVERLAY);
    expect(result.errors).toEqual([]);
    expect(result.objects).toBe(base.length + overlay.length);
    expect(status).toBe(0);
  });

  it('refuses an unknown field, a wrongly typed value and an unknown kind', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dap-k8s-'));
    try {
      const deployment = (name: string, container: string) =>
        `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: ${name} }\nspec:\n  selector: { matchLabels: { a: b } }\n  template:\n    metadata: { labels: { a: b } }\n    spec:\n      containers:\n        - { name: c, image: x, ${container} }\n`;
      const file = join(dir, 'bad.yaml');
      writeFileSync(
        file,
        [
          deployment('typo', 'readinesProbe: { httpGet: { path: /readyz, port: 8080 } }'),
          deployment('wrong-type', 'ports: [{ containerPort: eighty }]'),
          'apiVersion: v1\nkind: Servce\nmetadata: { name: x }\n',
          deployment('fine', 'ports: [{ containerPort: 8080 }]'),
        ].join('---\n'),
      );
      const { status, result } = validate(file);
      expect(status).toBe(1);
      expect(result.objects).toBe(4);
      const errors = result.errors;
      expect(errors.filter((e) => e.startsWith('Deployment typo:')).join('\n')).toMatch(/readinesProbe/);
      expect(errors.filter((e) => e.startsWith('Deployment wrong-type:')).join('\n')).toMatch(/containerPort must be integer/);
      expect(errors).toContain('Servce x: v1 Servce is not a Kubernetes API kind');
      expect(errors.filter((e) => e.startsWith('Deployment fine:'))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The real kustomize (built once from the Go module proxy into .cache/ by deploy/k8s/kustomize.sh) must
 * render what render.ts renders. Skipped only on a machine without Go and without a cached binary.
 */
const kustomizeAvailable = existsSync(join(root, '.cache/kustomize')) || spawnSync('go', ['version']).status === 0;
(kustomizeAvailable ? describe : describe.skip)('render.ts against the real kustomize', () => {
  it('renders the same objects for the base and the example overlay', () => {
    for (const [dir, mine] of [
      [BASE, base],
      [OVERLAY, overlay],
    ] as const) {
      const out = execFileSync('bash', [join(root, 'deploy/k8s/kustomize.sh'), 'build', dir], { cwd: root, encoding: 'utf8', timeout: 280_000, stdio: ['ignore', 'pipe', 'pipe'] });
      const theirs = parseAllDocuments(out).map((d) => d.toJS() as K8sObject);
      const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
      const sorted = (l: readonly K8sObject[]) => [...l].sort((a, b) => key(a).localeCompare(key(b)));
      expect(sorted(mine)).toEqual(sorted(theirs));
    }
  }, 300_000);
});
