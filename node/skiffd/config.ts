// skiffd's configuration: a TOML file (containerd / CRI-O style) with command-line flags on top.
// Every key is declared once in KEYS below; that table drives validation, defaults and `--help`,
// so an unknown key or a bad value is always reported with the key's name and what it accepts.
import { describeTomlError } from './util/toml-error.ts';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { isAbsolute, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './logger.ts';
import { NRI_DEFAULTS, type NriConfig } from './nri/config.ts';
import { isHandlerName, parseRuntimeHandlers, RUNTIMES_HELP, type RuntimeHandlerConfig } from './runtime-handlers-config.ts';

export const DEFAULT_CONFIG_FILE = '/etc/skiffd/config.toml';

/** `auto`: systemd where systemd is PID 1, cgroupfs elsewhere (decided at start-up). */
export type CgroupDriver = 'auto' | 'cgroupfs' | 'systemd';

/** Credentials and TLS settings for one registry host. Same shape the image subsystem consumes. */
export interface RegistryHostConfig {
  username?: string;
  password?: string;
  /** base64 of `username:password` */
  auth?: string;
  /** An OAuth2 refresh token, traded at the bearer realm for an access token. */
  identityToken?: string;
  /** Skip TLS verification, and fall back to plain HTTP when the host does not speak TLS. */
  insecure?: boolean;
  /** containerd 1.x's `configs."HOST".tls` table: absolute paths, read at each connection. */
  tls?: RegistryHostTls;
}

export interface RegistryHostTls {
  /** A PEM bundle of CAs trusted for HOST, besides the system store. */
  caFile?: string;
  /** Client certificate and its key (PEM), shown to a registry that asks for one. */
  certFile?: string;
  keyFile?: string;
  /** Skip verification of HOST's certificate (TLS is still required). */
  insecureSkipVerify?: boolean;
}

export const DEFAULT_REGISTRY_CONFIG_PATH = '/etc/skiffd/certs.d';
/** A connection that stalls this long fails over to the next endpoint; containerd's whole-pull bound is 5 min. */
export const DEFAULT_PULL_PROGRESS_TIMEOUT_MS = 30_000;

export interface RegistryConfig {
  /** containerd 2's hosts directory: `<configPath>/<host>/hosts.toml` decides that host's endpoints. */
  configPath: string;
  /** How long a registry connection may go without progress (connect, an answer, each read) before the next endpoint is tried. */
  pullProgressTimeoutMs?: number;
  /** The largest OCI artifact (config and layers, in bytes) a pull accepts. */
  maxArtifactBytes?: number;
  /** Mirrors per registry host (`docker.io`, `registry.k8s.io`, `127.0.0.1:5000`), tried in order before the host itself. */
  mirrors: Record<string, { endpoints: string[] }>;
  configs: Record<string, RegistryHostConfig>;
}

export interface SkiffdConfig {
  /** Where the settings came from (undefined: defaults and flags only). */
  configFile: string | undefined;
  /** The listen URL as given, and the socket path it names. */
  listen: string;
  socketPath: string;
  root: string;
  state: string;
  logLevel: LogLevel;
  logFormat: LogFormat;
  runtime: {
    /** The handler a pod that names none runs under (a key of `handlers`). */
    defaultRuntime: string;
    /** Every runtime handler, the default one included. */
    handlers: Record<string, RuntimeHandlerConfig>;
    /** The default handler's binary and root (what `[runtime] runtime_path` and `runtime_root` set). */
    runtimePath: string;
    runtimeRoot: string;
    conmonPath: string;
    cgroupDriver: CgroupDriver;
  };
  cni: { confDir: string; binDirs: string[] };
  cdi: { enable: boolean; specDirs: string[] };
  streaming: { address: string; port: number };
  /** Where Prometheus metrics are served; undefined: not at all. */
  metrics: { address: { host: string; port: number } | undefined };
  registry: RegistryConfig;
  /** NRI, the Node Resource Interface (node/skiffd/nri/). */
  nri: NriConfig;
}

/** A configuration or command-line mistake: the message names the key or flag and what to fix. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Kind =
  | 'listen'
  | 'abs-path'
  | 'abs-path-list'
  | 'command'
  | 'log-level'
  | 'log-format'
  | 'cgroup-driver'
  | 'address'
  | 'port'
  | 'host-port'
  | 'bool'
  | 'duration'
  | 'handler';

interface KeySpec {
  /** Dotted TOML key, e.g. `runtime.runtime_path`. */
  key: string;
  kind: Kind;
  default: string;
  help: string;
  /** The command-line flag that overrides it, if any. */
  flag?: string;
}

export const KEYS: KeySpec[] = [
  {
    key: 'listen',
    kind: 'listen',
    default: 'unix:///run/skiffd/skiffd.sock',
    flag: '--listen',
    help: 'gRPC endpoint: unix:///PATH (or an absolute path); created with mode 0660',
  },
  { key: 'root', kind: 'abs-path', default: '/var/lib/skiffd', flag: '--root', help: 'persistent data (images, pod and container records)' },
  { key: 'state', kind: 'abs-path', default: '/run/skiffd', flag: '--state', help: 'runtime state that does not survive a reboot' },
  { key: 'log_level', kind: 'log-level', default: 'info', flag: '--log-level', help: 'debug | info | warn | error' },
  { key: 'log_format', kind: 'log-format', default: 'logfmt', flag: '--log-format', help: 'logfmt | json (one JSON object per line)' },
  {
    key: 'runtime.default_runtime',
    kind: 'handler',
    default: 'runc',
    help: 'the runtime handler of pods that name none (a [runtimes.NAME] table, or made from runtime_path and runtime_root)',
  },
  { key: 'runtime.runtime_path', kind: 'command', default: 'runc', help: "the default handler's OCI runtime binary: a name on PATH, or an absolute path" },
  { key: 'runtime.runtime_root', kind: 'abs-path', default: '<state>/runc', help: "the default handler's --root (its container state)" },
  { key: 'runtime.conmon_path', kind: 'command', default: 'conmon', help: 'conmon binary (container monitor): a name on PATH, or an absolute path' },
  {
    key: 'runtime.cgroup_driver',
    kind: 'cgroup-driver',
    default: 'auto',
    help: 'auto | cgroupfs | systemd: who makes pod and container cgroups; auto is systemd where systemd is PID 1, cgroupfs elsewhere; reported to the kubelet by RuntimeConfig',
  },
  { key: 'cni.conf_dir', kind: 'abs-path', default: '/etc/cni/net.d', help: 'CNI network configurations (*.conflist, *.conf, *.json)' },
  { key: 'cni.bin_dir', kind: 'abs-path-list', default: '/usr/lib/cni', help: 'CNI plugin directory, or a list of them searched in order' },
  { key: 'cdi.enable', kind: 'bool', default: 'true', help: 'true | false: containers may ask for devices through CDI (Container Device Interface)' },
  {
    key: 'cdi.spec_dirs',
    kind: 'abs-path-list',
    default: '/etc/cdi,/var/run/cdi',
    help: 'where CDI spec files are read from (*.json, *.yaml); a later directory wins for a device both define',
  },
  { key: 'streaming.address', kind: 'address', default: '127.0.0.1', help: 'IP address the Exec/Attach/PortForward server listens on' },
  { key: 'streaming.port', kind: 'port', default: '0', help: 'port of the streaming server (0 = any free port)' },
  {
    key: 'nri.disable',
    kind: 'bool',
    default: 'false',
    help: 'true | false: turn NRI (node plugins: the socket, pre-installed plugins, every event) off; containerd\'s plugins."io.containerd.nri.v1.nri" disable',
  },
  { key: 'nri.socket_path', kind: 'abs-path', default: NRI_DEFAULTS.socketPath, help: 'the socket NRI plugins connect to' },
  { key: 'nri.plugin_path', kind: 'abs-path', default: NRI_DEFAULTS.pluginPath, help: 'pre-installed plugins (executables named NN-name) skiffd starts' },
  {
    key: 'nri.plugin_config_path',
    kind: 'abs-path',
    default: NRI_DEFAULTS.pluginConfigPath,
    help: "pre-installed plugins' configuration (NN-name.conf or name.conf)",
  },
  { key: 'nri.plugin_registration_timeout', kind: 'duration', default: '5s', help: 'how long a plugin has to register after it connects' },
  { key: 'nri.plugin_request_timeout', kind: 'duration', default: '2s', help: 'how long a plugin has to answer each event before it is dropped' },
  { key: 'nri.disable_connections', kind: 'bool', default: 'false', help: 'true: no socket; only pre-installed plugins' },
  { key: 'metrics.address', kind: 'host-port', default: '', help: 'IP:PORT to serve Prometheus metrics on at /metrics, e.g. "127.0.0.1:1338" (empty: off)' },
];

const REGISTRY_HELP = [
  [
    'registry.config_path',
    `directory of per-registry HOST/hosts.toml files, as containerd 2 reads them (default ${DEFAULT_REGISTRY_CONFIG_PATH}; re-read when they change; a host's hosts.toml wins over registry.mirrors."HOST")`,
  ],
  [
    'registry.pull_progress_timeout',
    'how long a registry connection may make no progress (connect, an answer, each read of a download) before the pull moves on to the next endpoint, or fails after the last (default "30s")',
  ],
  [
    'registry.max_artifact_size',
    'the largest OCI artifact (its config and layers, in bytes) a pull accepts; a larger one is refused before it downloads (default 68719476736, 64 GiB)',
  ],
  ['registry.mirrors."HOST".endpoints', 'deprecated (use config_path): list of mirror URLs (http:// or https://) tried before HOST, in order'],
  ['registry.configs."HOST".insecure', 'true: skip TLS verification and allow plain HTTP for HOST'],
  ['registry.configs."HOST".username', 'basic-auth / token-flow user for HOST'],
  ['registry.configs."HOST".password', 'password for username'],
  ['registry.configs."HOST".auth', 'base64 of "username:password" (instead of username/password)'],
  ['registry.configs."HOST".identity_token', 'OAuth2 refresh token for HOST'],
  ['registry.configs."HOST".tls.ca_file', 'absolute path of a PEM CA bundle trusted for HOST, besides the system store'],
  ['registry.configs."HOST".tls.cert_file', 'absolute path of the PEM client certificate shown to HOST (with key_file)'],
  ['registry.configs."HOST".tls.key_file', 'absolute path of the PEM key of cert_file'],
  ['registry.configs."HOST".tls.insecure_skip_verify', "true: do not verify HOST's certificate (TLS still required)"],
];

/** The config-key section of `--help`. */
export function describeConfigKeys(): string {
  const shown = (k: KeySpec) =>
    k.kind === 'port' || k.kind === 'bool'
      ? k.default
      : k.kind === 'abs-path-list' && k.default.includes(',')
        ? JSON.stringify(k.default.split(',')).replaceAll('","', '", "')
        : JSON.stringify(k.default);
  const rows: [string, string][] = KEYS.map((k) => [`${k.key} = ${shown(k)}`, k.help]);
  for (const [key, help] of [...RUNTIMES_HELP, ...REGISTRY_HELP]) rows.push([key, help]);
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, h]) => `  ${k.padEnd(width)}  ${h}`).join('\n');
}

/** Values given on the command line, keyed like KEYS (`listen`, `root`, ...). */
export type Overrides = Partial<Record<string, string>>;

export interface LoadOptions {
  /** --config: an explicit file must exist; without it the default file is optional. */
  configFile?: string;
  overrides?: Overrides;
  /** For relative flag values. */
  cwd?: string;
  /** The optional file read when no --config is given. Default /etc/skiffd/config.toml. */
  defaultConfigFile?: string;
}

export function loadConfig(options: LoadOptions = {}): SkiffdConfig {
  const explicit = options.configFile !== undefined;
  const file = resolve(options.cwd ?? process.cwd(), options.configFile ?? options.defaultConfigFile ?? DEFAULT_CONFIG_FILE);
  let text: string | undefined;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (!(code === 'ENOENT' && !explicit)) {
      const why = code === 'ENOENT' ? 'no such file' : (err as Error).message;
      throw new ConfigError(`cannot read config file ${file}: ${why}`);
    }
  }
  return parseConfig(text ?? '', { ...options, configFile: text === undefined ? undefined : file });
}

/** Validates TOML text (plus overrides) into a typed config. `configFile` only labels messages. */
export function parseConfig(text: string, options: LoadOptions = {}): SkiffdConfig {
  const where = options.configFile ? `config file ${options.configFile}` : 'config';
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`${where}: ${describeTomlError(err)}`);
  }

  // Flatten the fixed keys; reject anything unknown with the list of keys its table accepts.
  const values = new Map<string, unknown>();
  const tables = new Set(KEYS.filter((k) => k.key.includes('.')).map((k) => k.key.split('.')[0]));
  for (const [top, value] of Object.entries(doc)) {
    if (top === 'registry' || top === 'runtimes') continue;
    if (tables.has(top)) {
      if (!isTable(value)) throw new ConfigError(`${where}: "${top}" must be a table ([${top}])`);
      for (const [sub, subValue] of Object.entries(value)) {
        const key = `${top}.${sub}`;
        if (!KEYS.some((k) => k.key === key)) {
          const known = KEYS.filter((k) => k.key.startsWith(`${top}.`)).map((k) => k.key.slice(top.length + 1));
          throw new ConfigError(`${where}: unknown key "${key}" (known keys in [${top}]: ${known.join(', ')})`);
        }
        values.set(key, subValue);
      }
    } else if (KEYS.some((k) => k.key === top)) {
      values.set(top, value);
    } else {
      const known = [...KEYS.filter((k) => !k.key.includes('.')).map((k) => k.key), ...[...tables, 'runtimes', 'registry'].map((t) => `[${t}]`)];
      throw new ConfigError(`${where}: unknown key "${top}" (known top-level keys: ${known.join(', ')})`);
    }
  }

  const cwd = options.cwd ?? process.cwd();
  const get = (key: string) => {
    const spec = KEYS.find((k) => k.key === key)!;
    const flagValue = spec.flag ? options.overrides?.[key] : undefined;
    if (flagValue !== undefined) return convert(spec, flagValue, `${spec.flag} ${JSON.stringify(flagValue)}`, cwd);
    if (values.has(key)) return convert(spec, values.get(key), `${where}: ${key}`, undefined);
    return undefined;
  };

  const listen = (get('listen') as string | undefined) ?? 'unix:///run/skiffd/skiffd.sock';
  const state = (get('state') as string | undefined) ?? '/run/skiffd';
  const defaultRuntime = (get('runtime.default_runtime') as string | undefined) ?? 'runc';
  const handlers = parseRuntimeHandlers(doc.runtimes, {
    state,
    socketPath: socketPathOf(listen),
    defaultRuntime,
    legacy: { runtimePath: get('runtime.runtime_path') as string | undefined, runtimeRoot: get('runtime.runtime_root') as string | undefined },
    fail: (message) => {
      throw new ConfigError(`${where}: ${message}`);
    },
  });
  return {
    configFile: options.configFile,
    listen,
    socketPath: socketPathOf(listen),
    root: (get('root') as string | undefined) ?? '/var/lib/skiffd',
    state,
    logLevel: (get('log_level') as LogLevel | undefined) ?? 'info',
    logFormat: (get('log_format') as LogFormat | undefined) ?? 'logfmt',
    runtime: {
      defaultRuntime,
      handlers,
      runtimePath: handlers[defaultRuntime].runtimePath,
      runtimeRoot: handlers[defaultRuntime].runtimeRoot,
      conmonPath: (get('runtime.conmon_path') as string | undefined) ?? 'conmon',
      cgroupDriver: (get('runtime.cgroup_driver') as CgroupDriver | undefined) ?? 'auto',
    },
    cni: {
      confDir: (get('cni.conf_dir') as string | undefined) ?? '/etc/cni/net.d',
      binDirs: (get('cni.bin_dir') as string[] | undefined) ?? ['/usr/lib/cni'],
    },
    cdi: {
      enable: (get('cdi.enable') as boolean | undefined) ?? true,
      specDirs: (get('cdi.spec_dirs') as string[] | undefined) ?? ['/etc/cdi', '/var/run/cdi'],
    },
    streaming: {
      address: (get('streaming.address') as string | undefined) ?? '127.0.0.1',
      port: (get('streaming.port') as number | undefined) ?? 0,
    },
    metrics: { address: get('metrics.address') as { host: string; port: number } | undefined },
    registry: parseRegistry(doc.registry, where),
    nri: {
      enable: !((get('nri.disable') as boolean | undefined) ?? false),
      socketPath: (get('nri.socket_path') as string | undefined) ?? NRI_DEFAULTS.socketPath,
      pluginPath: (get('nri.plugin_path') as string | undefined) ?? NRI_DEFAULTS.pluginPath,
      pluginConfigPath: (get('nri.plugin_config_path') as string | undefined) ?? NRI_DEFAULTS.pluginConfigPath,
      registrationTimeoutMs: (get('nri.plugin_registration_timeout') as number | undefined) ?? NRI_DEFAULTS.registrationTimeoutMs,
      requestTimeoutMs: (get('nri.plugin_request_timeout') as number | undefined) ?? NRI_DEFAULTS.requestTimeoutMs,
      disableConnections: (get('nri.disable_connections') as boolean | undefined) ?? false,
    },
  };
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : Array.isArray(value) ? 'a list' : isTable(value) ? 'a table' : String(value);
}

/** Checks one value against its kind. `cwd` is set for flag values, which may be relative paths. */
function convert(spec: KeySpec, value: unknown, label: string, cwd: string | undefined): unknown {
  const fail = (expected: string): never => {
    throw new ConfigError(`${label}: expected ${expected}${cwd === undefined ? `, got ${describe(value)}` : ''}`);
  };
  const text = (): string => (typeof value === 'string' ? value : fail('a string'));
  const absPath = (p: string): string => {
    if (p === '') fail('a non-empty path');
    if (isAbsolute(p)) return resolve(p);
    if (cwd !== undefined) return resolve(cwd, p);
    return fail('an absolute path');
  };
  switch (spec.kind) {
    case 'listen': {
      const raw = text();
      if (!raw.startsWith('unix://') && raw.includes('://')) fail('a unix socket: unix:///absolute/path (other transports are not supported)');
      return `unix://${absPath(raw.startsWith('unix://') ? raw.slice('unix://'.length) : raw)}`;
    }
    case 'abs-path':
      return absPath(text());
    case 'abs-path-list': {
      const list =
        typeof value === 'string' ? (cwd !== undefined ? value.split(',') : [value]) : Array.isArray(value) ? value : fail('a path or a list of paths');
      if (list.length === 0) fail('at least one directory');
      return list.map((p) => (typeof p === 'string' ? absPath(p) : fail('a list of path strings')));
    }
    case 'bool': {
      if (typeof value === 'boolean') return value;
      if (cwd !== undefined && (value === 'true' || value === 'false')) return value === 'true';
      return fail('true or false');
    }
    case 'command': {
      const cmd = text();
      if (cmd === '') fail('a command name or an absolute path');
      if (cmd.includes('/') && !isAbsolute(cmd)) return cwd !== undefined ? resolve(cwd, cmd) : fail('a command name or an absolute path');
      return cmd;
    }
    case 'log-level': {
      const level = text();
      return (LOG_LEVELS as readonly string[]).includes(level) ? level : fail(`one of ${LOG_LEVELS.join(', ')}`);
    }
    case 'log-format': {
      const format = text();
      return (LOG_FORMATS as readonly string[]).includes(format) ? format : fail(`one of ${LOG_FORMATS.join(', ')}`);
    }
    case 'duration':
      return parseDurationMs(value, label);
    case 'handler': {
      const name = text();
      return isHandlerName(name) ? name : fail('a runtime handler name (a DNS label: lower-case letters, digits and "-")');
    }
    case 'cgroup-driver': {
      const driver = text();
      return driver === 'auto' || driver === 'cgroupfs' || driver === 'systemd' ? driver : fail('one of auto, cgroupfs, systemd');
    }
    case 'address': {
      const addr = text();
      return isIP(addr) !== 0 ? addr : fail('an IP address such as 127.0.0.1 or ::1');
    }
    case 'port': {
      const port = typeof value === 'string' && cwd !== undefined ? Number(value) : value;
      return typeof port === 'number' && Number.isInteger(port) && port >= 0 && port <= 65535 ? port : fail('an integer port from 0 to 65535');
    }
    case 'host-port': {
      const given = text();
      if (given === '') return undefined;
      const m = /^(?:\[([0-9a-fA-F:]+)\]|([0-9.]+)):(\d{1,5})$/.exec(given);
      const host = m?.[1] ?? m?.[2];
      const port = Number(m?.[3]);
      return host && isIP(host) !== 0 && port <= 65535 ? { host, port } : fail('IP:PORT, such as 127.0.0.1:1338 or [::1]:1338 (port 0: any free port)');
    }
  }
}

const HOST = /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]{1,5})?$/;
const HOST_CONFIG_KEYS: Record<string, 'string' | 'bool' | 'table'> = {
  insecure: 'bool',
  username: 'string',
  password: 'string',
  auth: 'string',
  identity_token: 'string',
  tls: 'table',
};
const HOST_TLS_KEYS: Record<string, 'abs-path' | 'bool'> = {
  ca_file: 'abs-path',
  cert_file: 'abs-path',
  key_file: 'abs-path',
  insecure_skip_verify: 'bool',
};

/** A duration as containerd writes them ("30s", "5m", "1m30s", "500ms"), at least 1 ms and at most a day. */
export function parseDurationMs(value: unknown, label: string): number {
  const text = typeof value === 'string' ? value.trim() : '';
  const parts = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/.test(text) ? [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)] : [];
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;
  const ms = parts.reduce((sum, [, n, u]) => sum + Number(n) * unit[u as keyof typeof unit], 0);
  if (parts.length === 0 || ms < 1 || ms > 86_400_000)
    throw new ConfigError(`${label}: expected a duration between 1ms and 24h such as "30s", "5m" or "1m30s", got ${describe(value)}`);
  return Math.round(ms);
}

function parseRegistry(value: unknown, where: string): RegistryConfig {
  const out: RegistryConfig = { configPath: DEFAULT_REGISTRY_CONFIG_PATH, pullProgressTimeoutMs: DEFAULT_PULL_PROGRESS_TIMEOUT_MS, mirrors: {}, configs: {} };
  if (value === undefined) return out;
  if (!isTable(value)) throw new ConfigError(`${where}: "registry" must be a table ([registry.mirrors."HOST"], [registry.configs."HOST"])`);
  for (const [section, hosts] of Object.entries(value)) {
    if (section === 'config_path') {
      if (typeof hosts !== 'string' || !isAbsolute(hosts)) {
        throw new ConfigError(`${where}: registry.config_path: expected an absolute directory path, got ${describe(hosts)}`);
      }
      out.configPath = resolve(hosts);
      continue;
    }
    if (section === 'pull_progress_timeout') {
      out.pullProgressTimeoutMs = parseDurationMs(hosts, `${where}: registry.pull_progress_timeout`);
      continue;
    }
    if (section === 'max_artifact_size') {
      if (typeof hosts !== 'number' || !Number.isSafeInteger(hosts) || hosts < 1) {
        throw new ConfigError(`${where}: registry.max_artifact_size: expected a positive integer number of bytes, got ${describe(hosts)}`);
      }
      out.maxArtifactBytes = hosts;
      continue;
    }
    if (section !== 'mirrors' && section !== 'configs') {
      throw new ConfigError(
        `${where}: unknown key "registry.${section}" (known: registry.config_path, registry.pull_progress_timeout, registry.max_artifact_size, registry.mirrors."HOST", registry.configs."HOST")`,
      );
    }
    if (!isTable(hosts)) throw new ConfigError(`${where}: registry.${section} must be a table of hosts, e.g. [registry.${section}."docker.io"]`);
    for (const [host, settings] of Object.entries(hosts)) {
      const label = `${where}: registry.${section}."${host}"`;
      if (!HOST.test(host))
        throw new ConfigError(`${label}: "${host}" is not a registry host (expected host or host:port, e.g. registry.k8s.io or 127.0.0.1:5000)`);
      if (!isTable(settings)) throw new ConfigError(`${label} must be a table`);
      if (section === 'mirrors') out.mirrors[host] = { endpoints: parseEndpoints(settings, label) };
      else out.configs[host] = parseHostConfig(settings, label);
    }
  }
  return out;
}

function parseEndpoints(settings: Record<string, unknown>, label: string): string[] {
  for (const key of Object.keys(settings)) {
    if (key !== 'endpoints') throw new ConfigError(`${label}: unknown key "${key}" (known: endpoints)`);
  }
  const endpoints = settings.endpoints;
  if (!Array.isArray(endpoints) || endpoints.length === 0) throw new ConfigError(`${label}.endpoints: expected a non-empty list of URLs`);
  return endpoints.map((e) => {
    if (typeof e !== 'string') throw new ConfigError(`${label}.endpoints: expected URL strings, got ${describe(e)}`);
    let url: URL;
    try {
      url = new URL(e);
    } catch {
      throw new ConfigError(`${label}.endpoints: "${e}" is not a URL (expected http://host[:port] or https://host[:port])`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${label}.endpoints: "${e}" must use http:// or https://`);
    return e;
  });
}

function parseHostConfig(settings: Record<string, unknown>, label: string): RegistryHostConfig {
  const out: RegistryHostConfig = {};
  for (const [key, value] of Object.entries(settings)) {
    const type = HOST_CONFIG_KEYS[key];
    if (!type) throw new ConfigError(`${label}: unknown key "${key}" (known: ${Object.keys(HOST_CONFIG_KEYS).join(', ')})`);
    if (type === 'bool' && typeof value !== 'boolean') throw new ConfigError(`${label}.${key}: expected true or false, got ${describe(value)}`);
    if (type === 'string' && typeof value !== 'string') throw new ConfigError(`${label}.${key}: expected a string, got ${describe(value)}`);
    if (type === 'table' && !isTable(value))
      throw new ConfigError(`${label}.${key}: expected a table ([registry.configs."HOST".${key}]), got ${describe(value)}`);
  }
  if (settings.tls !== undefined) out.tls = parseHostTls(settings.tls as Record<string, unknown>, `${label}.tls`);
  if (settings.insecure !== undefined) out.insecure = settings.insecure as boolean;
  if (settings.username !== undefined) out.username = settings.username as string;
  if (settings.password !== undefined) out.password = settings.password as string;
  if (settings.auth !== undefined) out.auth = settings.auth as string;
  if (settings.identity_token !== undefined) out.identityToken = settings.identity_token as string;
  if (out.password !== undefined && out.username === undefined) throw new ConfigError(`${label}: password is set without username`);
  return out;
}

function parseHostTls(settings: Record<string, unknown>, label: string): RegistryHostTls {
  for (const [key, value] of Object.entries(settings)) {
    const type = HOST_TLS_KEYS[key];
    if (!type) throw new ConfigError(`${label}: unknown key "${key}" (known: ${Object.keys(HOST_TLS_KEYS).join(', ')})`);
    if (type === 'bool' && typeof value !== 'boolean') throw new ConfigError(`${label}.${key}: expected true or false, got ${describe(value)}`);
    if (type === 'abs-path' && (typeof value !== 'string' || !isAbsolute(value))) {
      throw new ConfigError(`${label}.${key}: expected an absolute path, got ${describe(value)}`);
    }
  }
  const out: RegistryHostTls = {};
  if (settings.ca_file !== undefined) out.caFile = settings.ca_file as string;
  if (settings.cert_file !== undefined) out.certFile = settings.cert_file as string;
  if (settings.key_file !== undefined) out.keyFile = settings.key_file as string;
  if (settings.insecure_skip_verify !== undefined) out.insecureSkipVerify = settings.insecure_skip_verify as boolean;
  // containerd 1.x required the pair; a key alone is a mistake worth saying.
  if ((out.certFile === undefined) !== (out.keyFile === undefined)) throw new ConfigError(`${label}: cert_file and key_file go together (set both or neither)`);
  return out;
}

/** The socket path named by a validated listen URL. */
export function socketPathOf(listen: string): string {
  return listen.slice('unix://'.length);
}

/** The config as JSON-safe data with secrets replaced, for logs and verbose Status. */
export function redactedConfig(config: SkiffdConfig): unknown {
  const configs: Record<string, RegistryHostConfig> = {};
  for (const [host, c] of Object.entries(config.registry.configs)) {
    configs[host] = { ...c };
    for (const secret of ['password', 'auth', 'identityToken'] as const) if (c[secret] !== undefined) configs[host][secret] = '<redacted>';
  }
  return { ...config, registry: { ...config.registry, configs } };
}
