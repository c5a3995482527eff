// Command-line parsing and --help for skiffd. Flags mirror the config keys they override
// (containerd/CRI-O style): the file sets the defaults, flags win.
import { DEFAULT_CONFIG_FILE, KEYS, ConfigError, describeConfigKeys, type Overrides } from './config.ts';
import { RUNTIME_API_VERSION, RUNTIME_VERSION } from './version.ts';

export interface CliOptions {
  help: boolean;
  version: boolean;
  configFile?: string;
  overrides: Overrides;
}

const VALUE_FLAGS: Record<string, string> = { '--config': 'config' };
for (const k of KEYS) if (k.flag) VALUE_FLAGS[k.flag] = k.key;

export function parseCli(argv: string[]): CliOptions {
  const options: CliOptions = { help: false, version: false, overrides: {} };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') {
      options.help = true;
      continue;
    }
    if (arg === '-v' || arg === '--version') {
      options.version = true;
      continue;
    }
    if (!arg.startsWith('-')) throw new ConfigError(`unexpected argument "${arg}" (skiffd takes only flags; see skiffd --help)`);
    const eq = arg.indexOf('=');
    const flag = eq >= 0 ? arg.slice(0, eq) : arg;
    const target = VALUE_FLAGS[flag];
    if (!target) throw new ConfigError(`unknown flag "${flag}" (known flags: ${[...Object.keys(VALUE_FLAGS), '--help', '--version'].join(', ')})`);
    let value: string | undefined;
    if (eq >= 0) value = arg.slice(eq + 1);
    else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) value = argv[++i];
    if (value === undefined || value === '') throw new ConfigError(`flag ${flag} needs a value (see skiffd --help)`);
    if (target === 'config') options.configFile = value;
    else options.overrides[target] = value;
  }
  return options;
}

export function versionText(): string {
  return `skiffd ${RUNTIME_VERSION} (CRI runtime.${RUNTIME_API_VERSION}, node ${process.version})`;
}

export function helpText(): string {
  const flagRows: [string, string][] = [
    ['--config FILE', `TOML config file (default ${DEFAULT_CONFIG_FILE}; a missing default file is fine, a missing --config file is an error)`],
  ];
  for (const k of KEYS) {
    if (!k.flag) continue;
    const meta = k.kind === 'listen' ? 'URL' : k.kind === 'log-level' ? 'LEVEL' : k.kind === 'log-format' ? 'FORMAT' : 'DIR';
    flagRows.push([`${k.flag} ${meta}`, `${k.help} (config key ${k.key}, default ${k.default})`]);
  }
  flagRows.push(['-h, --help', 'show this help'], ['-v, --version', 'print the version and exit']);
  const width = Math.max(...flagRows.map(([f]) => f.length));
  return `Usage: skiffd [flags]

skiffd is a Kubernetes CRI runtime: it serves the runtime.v1 RuntimeService and ImageService
over gRPC on a unix socket, running containers with an OCI runtime (runc) and conmon, and pod
networks with CNI plugins. SIGTERM or SIGINT stops it cleanly (drains calls, removes the socket).

Flags (each overrides the config key it names):
${flagRows.map(([f, h]) => `  ${f.padEnd(width)}  ${h}`).join('\n')}

Config file keys (TOML; "runtime.runtime_path" means runtime_path in the [runtime] table):
${describeConfigKeys()}

Example ${DEFAULT_CONFIG_FILE}:
  listen = "unix:///run/skiffd/skiffd.sock"
  log_level = "info"
  [runtime]
  runtime_path = "runc"
  cgroup_driver = "auto"
  [cni]
  conf_dir = "/etc/cni/net.d"
  bin_dir = ["/usr/lib/cni", "/opt/cni/bin"]
  [registry.mirrors."registry.k8s.io"]
  endpoints = ["http://127.0.0.1:5000"]
  [registry.configs."127.0.0.1:5000"]
  insecure = true
`;
}
