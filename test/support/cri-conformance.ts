// The CRI conformance kit beside the repository (../shared/cri-conformance): critest and crictl 1.36
// (current), 1.32 and 1.29, and the images critest pulls, served by Debian's docker-registry. Only tests
// and benchmarks use it; the product never reads it.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './skiffd.ts';
import { runCommand } from './commands.ts';
import { scaled } from './time-scale.ts';
import { issue, makeCa } from './pki.ts';
import { startRegistry } from './registry.ts';

export const kitDir = process.env.CRI_CONFORMANCE_DIR ?? join(repoRoot, '..', 'shared', 'cri-conformance');
/** The cri-tools releases the kit carries: 1.36 (paired with the kit's current Kubernetes), 1.32 and 1.29. */
export type CriToolsVersion = '1.29' | '1.32' | '1.36';

/** critest of that release (1.29 is the kit's unsuffixed binary). */
export function critestPath(version: CriToolsVersion = '1.36'): string {
  return join(kitDir, 'bin', version === '1.29' ? 'critest' : `critest-${version}`);
}

/** crictl of that release. */
export function crictlPath(version: CriToolsVersion = '1.36'): string {
  return join(kitDir, 'bin', version === '1.29' ? 'crictl' : `crictl-${version}`);
}

export const critestBin = critestPath('1.36');
export const crictlBin = crictlPath('1.36');

/** Why the kit cannot be used here (with that critest), or undefined when it can. */
export function kitMissing(version: CriToolsVersion = '1.36'): string | undefined {
  for (const file of [critestPath(version), join(kitDir, 'registry.sh'), join(kitDir, 'registry-data.tar.gz')]) {
    if (!existsSync(file)) return `the CRI conformance kit is missing (${file}); put it at ../shared/cri-conformance or set CRI_CONFORMANCE_DIR`;
  }
  return undefined;
}

/** The one spec that cannot pass offline: it pins the digest of the upstream image. */
export const OFFLINE_IMPOSSIBLE = 'public image with digest should be pulled and removed';

export interface KitRegistry {
  url: string;
  port: number;
  /** skiffd TOML mirroring every registry critest names to this one. */
  mirrorsToml: string;
  /** What docker-registry wrote so far: its access log (one line per request, with the User-Agent) and errors. */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Every registry critest names. k8s.gcr.io too: critest 1.36 pulls one image under both of its names
 * (registry.k8s.io and k8s.gcr.io).
 */
export const KIT_REGISTRY_HOSTS = ['registry.k8s.io', 'k8s.gcr.io', 'gcr.io', 'public.ecr.aws', 'docker.io'] as const;

/** The upstream of each of those registries, as a hosts.toml's `server` names it. */
const UPSTREAM: Record<(typeof KIT_REGISTRY_HOSTS)[number], string> = {
  'registry.k8s.io': 'https://registry.k8s.io',
  'k8s.gcr.io': 'https://k8s.gcr.io',
  'gcr.io': 'https://gcr.io',
  'public.ecr.aws': 'https://public.ecr.aws',
  'docker.io': 'https://registry-1.docker.io',
};

export interface KitTlsRegistry extends KitRegistry {
  /** `https://127.0.0.1:PORT` */
  url: string;
  /** The CA that signed the registry's certificate (no system store trusts it). */
  caPath: string;
  /**
   * skiffd TOML pointing `[registry] config_path` at a certs.d directory the registry wrote for itself
   * (`hostsDir` with the CA), with `127.0.0.1:PORT` too, so a reference by the registry's own address
   * is verified against the CA as well.
   */
  mirrorsToml: string;
  /**
   * Writes a containerd 2-style certs.d directory under `dir` (for `[registry] config_path`): one
   * `HOST/hosts.toml` per registry critest names, each with this registry as its pull/resolve host and,
   * unless `ca: false`, the CA as that host's `ca`. Returns the directory.
   */
  hostsDir(dir: string, options?: { ca?: boolean }): string;
}

/**
 * The kit's images served over TLS: the same registry data, unpacked here and served by docker-registry
 * (test/support/registry.ts) with a certificate for 127.0.0.1 signed by a throwaway CA.
 */
export async function startKitRegistryTls(): Promise<KitTlsRegistry> {
  const dir = mkdtempSync(join(tmpdir(), 'cri-kit-registry-tls-'));
  try {
    const ca = makeCa(dir, 'skiff critest registry CA');
    const cert = issue(ca, dir, 'registry', ['127.0.0.1']);
    const untar = await runCommand('tar', ['-C', dir, '-xzf', join(kitDir, 'registry-data.tar.gz')], { timeoutMs: scaled(120_000) });
    if (untar.code !== 0) throw new Error(`cannot unpack the kit's registry data: ${untar.stderr}`);
    const registry = await startRegistry({ storageDir: join(dir, 'registry'), tls: cert });
    const hostsDir = (root: string, options: { ca?: boolean } = {}) => {
      const caLine = options.ca === false ? [] : [`ca = ${JSON.stringify(ca.certPath)}`];
      for (const host of KIT_REGISTRY_HOSTS) {
        mkdirSync(join(root, host), { recursive: true });
        const lines = [
          `server = ${JSON.stringify(UPSTREAM[host])}`,
          '',
          `[host.${JSON.stringify(registry.url)}]`,
          'capabilities = ["pull", "resolve"]',
          ...caLine,
        ];
        writeFileSync(join(root, host, 'hosts.toml'), `${lines.join('\n')}\n`);
      }
      // The registry by its own address: verified too (a localhost registry is otherwise tried unverified).
      mkdirSync(join(root, registry.host), { recursive: true });
      writeFileSync(join(root, registry.host, 'hosts.toml'), `${[`server = ${JSON.stringify(registry.url)}`, ...caLine].join('\n')}\n`);
      return root;
    };
    const ownHostsDir = hostsDir(join(dir, 'certs.d'));
    return {
      url: registry.url,
      port: Number(registry.host.split(':').pop()),
      caPath: ca.certPath,
      mirrorsToml: `[registry]\nconfig_path = ${JSON.stringify(ownHostsDir)}\n`,
      log: registry.log,
      hostsDir,
      async stop() {
        await registry.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Unpacks the kit's images and serves them with docker-registry on 127.0.0.1:port. */
export async function startKitRegistry(port: number): Promise<KitRegistry> {
  const dir = mkdtempSync(join(tmpdir(), 'cri-kit-registry-'));
  const script = join(kitDir, 'registry.sh');
  const url = `http://127.0.0.1:${port}`;
  const started = await runCommand('sh', [script, 'start', dir, String(port)], { timeoutMs: scaled(120_000) });
  // registry.sh gives the registry five seconds to answer; on a slow machine (the emulated node) it can
  // take longer to start. While it runs, its answer is awaited here, bounded.
  const answers = () =>
    fetch(`${url}/v2/`, { signal: AbortSignal.timeout(5_000) }).then(
      (r) => r.ok,
      () => false,
    );
  const pidFile = join(dir, 'registry.pid');
  const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) || undefined : undefined;
  const alive = () => pid !== undefined && existsSync(`/proc/${pid}`);
  let up = started.code === 0;
  for (const deadline = Date.now() + scaled(60_000); !up && alive() && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 500));
    up = await answers();
  }
  if (!up) {
    await runCommand('sh', [script, 'stop', dir], { timeoutMs: 10_000 });
    const log = existsSync(join(dir, 'registry.log')) ? readFileSync(join(dir, 'registry.log'), 'utf8').slice(-2000) : '';
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`registry.sh start failed (${started.code}): ${started.stderr || started.stdout}\n${log}`);
  }
  const mirrorsToml = [
    ...KIT_REGISTRY_HOSTS.map((h) => `[registry.mirrors.${JSON.stringify(h)}]\nendpoints = [${JSON.stringify(url)}]`),
    `[registry.configs."127.0.0.1:${port}"]\ninsecure = true`,
  ].join('\n');
  return {
    url,
    port,
    mirrorsToml,
    log: () => (existsSync(join(dir, 'registry.log')) ? readFileSync(join(dir, 'registry.log'), 'utf8') : ''),
    async stop() {
      await runCommand('sh', [script, 'stop', dir], { timeoutMs: 10_000 });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface SpecResult {
  /** Describe texts and the spec's own text, as critest prints them. */
  name: string;
  leaf: string;
  state: string;
  /** critest's failure message, or for a skipped spec the reason it gave to Skip(). */
  message: string;
}

export interface CritestRun {
  code: number | null;
  /** What critest printed (colour codes kept out). */
  output: string;
  specs: SpecResult[];
  timedOut: boolean;
}

/** Runs critest against a CRI socket, bounded, and reads its ginkgo JSON report. */
export async function runCritest(
  socket: string,
  options: { focus?: string; skip?: string; timeoutMs?: number; extraArgs?: string[]; version?: CriToolsVersion } = {},
): Promise<CritestRun> {
  const dir = mkdtempSync(join(tmpdir(), 'critest-'));
  const report = join(dir, 'report.json');
  const args = [
    `--runtime-endpoint=unix://${socket}`,
    `--image-endpoint=unix://${socket}`,
    `--ginkgo.json-report=${report}`,
    '--ginkgo.no-color',
    ...(options.focus ? [`--ginkgo.focus=${options.focus}`] : []),
    ...(options.skip ? [`--ginkgo.skip=${options.skip}`] : []),
    ...(options.extraArgs ?? []),
  ];
  try {
    const run = await runBounded(critestPath(options.version), args, options.timeoutMs ?? 15 * 60_000, dir);
    const specs: SpecResult[] = [];
    if (existsSync(report)) {
      const suites = JSON.parse(readFileSync(report, 'utf8')) as {
        SpecReports?: { State: string; LeafNodeText: string; ContainerHierarchyTexts?: string[]; LeafNodeType?: string; Failure?: { Message?: string } }[];
      }[];
      for (const suite of suites) {
        for (const s of suite.SpecReports ?? []) {
          if (s.LeafNodeType && s.LeafNodeType !== 'It') continue;
          specs.push({
            name: [...(s.ContainerHierarchyTexts ?? []), s.LeafNodeText].join(' '),
            leaf: s.LeafNodeText,
            state: s.State,
            message: (s.Failure?.Message ?? '').trim(),
          });
        }
      }
    }
    return { ...run, specs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function runBounded(file: string, args: string[], timeoutMs: number, cwd: string): Promise<{ code: number | null; output: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const take = (d: Buffer) => {
      output += d.toString();
      if (output.length > 4 << 20) output = output.slice(-(2 << 20));
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: -1, output: `${output}\ncannot run ${file}: ${err.message}`, timedOut });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, timedOut });
    });
  });
}

/** A readable account of the failed specs: name and critest's message, one block each. */
export function describeFailures(specs: SpecResult[]): string {
  return specs
    .filter((s) => s.state !== 'passed' && s.state !== 'skipped')
    .map((s) => `- ${s.name} [${s.state}]\n    ${s.message.split('\n').slice(0, 6).join('\n    ')}`)
    .join('\n');
}

/** The host lets AppArmor profiles load: what critest checks (as runc does) before its AppArmor specs. */
export function hostAppArmorEnabled(): boolean {
  if (!existsSync('/sys/kernel/security/apparmor')) return false;
  try {
    return readFileSync('/sys/module/apparmor/parameters/enabled', 'utf8').startsWith('Y');
  } catch {
    return false;
  }
}

/** How critest words its skip of the AppArmor specs on a host without AppArmor. */
export const APPARMOR_OFF_REASON = 'AppArmor is disabled on this host';

const isAppArmorSpec = (s: SpecResult) => s.name.startsWith('[k8s.io] AppArmor ');
/** critest runs its benchmark specs only with -benchmark; otherwise its filter skips them, with no reason given. */
const isBenchmarkSpec = (s: SpecResult) => /\bbenchmark\b/.test(s.name);

export interface CritestVerdict {
  passed: SpecResult[];
  /** Failed, panicked or timed out: anything but the digest spec failing to pull. */
  failed: SpecResult[];
  /** Skipped for any reason the gate does not accept, e.g. a feature the runtime does not advertise. */
  skipped: SpecResult[];
  /** The offline-impossible digest spec, when it failed as it must here (the pull finds no such manifest). */
  digest?: SpecResult;
  /** AppArmor specs skipped because the host has AppArmor off (accepted only when it really is off). */
  appArmorOff: SpecResult[];
  /** Benchmark specs, left out of a run without -benchmark. */
  benchmarks: SpecResult[];
}

/**
 * Sorts a critest run into what passed and what the gate accepts or refuses. Accepted without a pass:
 * the digest spec failing to pull, AppArmor specs skipped for the reason critest gives on a host with
 * AppArmor off (when it is off), and benchmark specs outside -benchmark.
 * Every other skip is refused: critest skips a spec when the runtime does not advertise its feature.
 */
export function judgeCritest(specs: SpecResult[], options: { appArmorEnabled: boolean }): CritestVerdict {
  const v: CritestVerdict = { passed: [], failed: [], skipped: [], appArmorOff: [], benchmarks: [] };
  for (const s of specs) {
    if (s.state === 'passed') v.passed.push(s);
    else if (s.leaf.startsWith(OFFLINE_IMPOSSIBLE) && s.state === 'failed' && /failed to pull image/.test(s.message) && !v.digest) v.digest = s;
    else if (s.state !== 'skipped') v.failed.push(s);
    else if (isAppArmorSpec(s) && s.message === APPARMOR_OFF_REASON && !options.appArmorEnabled) v.appArmorOff.push(s);
    else if (isBenchmarkSpec(s) && s.message === '') v.benchmarks.push(s);
    else v.skipped.push(s);
  }
  return v;
}

/** The AppArmor specs in a run (to check every one of them, not a count, was skipped for the host's reason). */
export const appArmorSpecs = (specs: SpecResult[]) => specs.filter(isAppArmorSpec);

/** A readable account of skipped specs with critest's reason. */
export function describeSkips(specs: SpecResult[]): string {
  return specs.map((s) => `- ${s.name}\n    skipped: ${s.message || '(no reason given)'}`).join('\n');
}
