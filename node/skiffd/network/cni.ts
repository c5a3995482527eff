// Drives CNI plugins per the CNI spec: one exec per plugin, parameters in CNI_* environment variables,
// the plugin's network config on stdin, its result (or error) as JSON on stdout. A network list runs
// its plugins in order for ADD, each seeing the previous result, and in reverse for DEL.
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { execCommand } from '../util/command.ts';
import { loadNetwork, requiredPluginTypes, type CniNetworkList, type CniPluginConf, type LoadedNetwork } from './cni-config.ts';

export const DEFAULT_IFNAME = 'eth0';

export interface CniPortMapping {
  hostPort: number;
  containerPort: number;
  protocol: 'tcp' | 'udp' | 'sctp';
  hostIP?: string;
}

export interface CniRuntimeConfig {
  portMappings?: CniPortMapping[];
}

/** Everything needed to repeat the exact same DEL later, even after a restart or a config change. */
export interface NetworkAttachment {
  network: CniNetworkList;
  containerId: string;
  netns: string;
  ifname: string;
  /** CNI_ARGS, `K=V;K=V`. */
  args: string;
  runtimeConfig: CniRuntimeConfig;
  /** The final ADD result, once ADD succeeded. */
  result?: CniResult;
}

export interface CniResult {
  cniVersion?: string;
  interfaces?: { name: string; mac?: string; sandbox?: string }[];
  ips?: { address: string; gateway?: string; interface?: number; version?: string }[];
  ip4?: { ip: string };
  ip6?: { ip: string };
  [key: string]: unknown;
}

/** A plugin failed: its own error code and message when it gave them. */
export class CniPluginError extends Error {
  constructor(
    readonly plugin: string,
    readonly command: string,
    readonly network: string,
    readonly cniCode: number | undefined,
    detail: string,
  ) {
    super(`CNI plugin "${plugin}" ${command} failed for network "${network}"${cniCode !== undefined ? ` (CNI error ${cniCode})` : ''}: ${detail}`);
    this.name = 'CniPluginError';
  }
}

/** The network cannot be used at all (no config, missing plugin binaries). */
export class CniNotReadyError extends Error {
  override name = 'CniNotReadyError';
}

export interface CniOptions {
  confDir: string;
  binDirs: string[];
  /** Per plugin exec; a plugin stuck longer than this is killed and the call fails. */
  pluginTimeoutMs?: number;
}

/** Compares dotted versions ("0.3.1" < "1.0.0"). */
export function versionAtLeast(version: string, min: string): boolean {
  const a = version.split('.').map((n) => Number.parseInt(n, 10) || 0);
  const b = min.split('.').map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  }
  return true;
}

/** Primary IP (IPv4 first) and the rest, from any result version. */
export function resultIps(result: CniResult | undefined, ifname = DEFAULT_IFNAME): { ip: string; additionalIps: string[] } {
  const found: string[] = [];
  if (result?.ips) {
    for (const entry of result.ips) {
      const iface = entry.interface !== undefined ? result.interfaces?.[entry.interface] : undefined;
      if (iface && iface.name !== ifname) continue;
      found.push(entry.address.split('/')[0]);
    }
  } else {
    if (result?.ip4?.ip) found.push(result.ip4.ip.split('/')[0]);
    if (result?.ip6?.ip) found.push(result.ip6.ip.split('/')[0]);
  }
  const ordered = [...found.filter((ip) => !ip.includes(':')), ...found.filter((ip) => ip.includes(':'))];
  return { ip: ordered[0] ?? '', additionalIps: ordered.slice(1) };
}

export class Cni {
  readonly confDir: string;
  readonly binDirs: string[];
  private readonly timeoutMs: number;

  constructor(options: CniOptions) {
    this.confDir = options.confDir;
    this.binDirs = options.binDirs;
    this.timeoutMs = options.pluginTimeoutMs ?? 60_000;
  }

  load(): Promise<LoadedNetwork> {
    return loadNetwork(this.confDir);
  }

  findPlugin(type: string): string | undefined {
    if (type.includes('/') || type.startsWith('.')) return undefined;
    for (const dir of this.binDirs) {
      const file = join(dir, type);
      try {
        accessSync(file, constants.X_OK);
        return file;
      } catch {
        /* next dir */
      }
    }
    return undefined;
  }

  /** The attachment a pod would get now (the current config), to be stored before ADD runs. */
  async prepare(containerId: string, netns: string, args: Record<string, string>, runtimeConfig: CniRuntimeConfig): Promise<NetworkAttachment> {
    const loaded = await this.load();
    if (!loaded.network) throw new CniNotReadyError(`no usable CNI network config: ${loaded.problems.join('; ')}`);
    // Checked up front so a missing binary fails before any plugin ran (nothing to undo then).
    const missing = requiredPluginTypes(loaded.network).filter((t) => !this.findPlugin(t));
    if (missing.length > 0) {
      throw new CniNotReadyError(
        `CNI plugin${missing.length > 1 ? 's' : ''} ${missing.map((m) => `"${m}"`).join(', ')} (network "${loaded.network.name}") not found in ${this.binDirs.join(':')}`,
      );
    }
    const cniArgs = ['IgnoreUnknown=1', ...Object.entries(args).map(([k, v]) => `${k}=${v}`)].join(';');
    return { network: loaded.network, containerId, netns, ifname: DEFAULT_IFNAME, args: cniArgs, runtimeConfig };
  }

  async add(attachment: NetworkAttachment): Promise<CniResult> {
    const { network } = attachment;
    const chain = versionAtLeast(network.cniVersion, '0.3.0');
    let previous: CniResult | undefined;
    for (const plugin of network.plugins) {
      const out = await this.invoke('ADD', plugin, attachment, attachment.netns, chain ? previous : undefined);
      if (!out) throw new CniPluginError(plugin.type, 'ADD', network.name, undefined, 'printed no result');
      previous = out;
    }
    return previous ?? {};
  }

  /** DEL in reverse order. `netnsAlive` false passes an empty CNI_NETNS, as the spec allows. */
  async del(attachment: NetworkAttachment, netnsAlive: boolean): Promise<void> {
    const { network } = attachment;
    const prev = versionAtLeast(network.cniVersion, '0.4.0') ? attachment.result : undefined;
    for (const plugin of [...network.plugins].reverse()) {
      await this.invoke('DEL', plugin, attachment, netnsAlive ? attachment.netns : '', prev);
    }
  }

  private async invoke(
    command: 'ADD' | 'DEL',
    plugin: CniPluginConf,
    attachment: NetworkAttachment,
    netns: string,
    prevResult: CniResult | undefined,
  ): Promise<CniResult | undefined> {
    const networkName = attachment.network.name;
    const binary = this.findPlugin(plugin.type);
    if (!binary) {
      throw new CniNotReadyError(`CNI plugin "${plugin.type}" (network "${networkName}") not found in ${this.binDirs.join(':')}`);
    }
    const conf: Record<string, unknown> = { ...plugin, name: networkName, cniVersion: attachment.network.cniVersion };
    // Per the spec's conventions, runtime config goes only to plugins that declare the capability.
    const runtimeConfig: Record<string, unknown> = {};
    for (const [capability, value] of Object.entries(attachment.runtimeConfig)) {
      if (plugin.capabilities?.[capability] && value !== undefined) runtimeConfig[capability] = value;
    }
    if (Object.keys(runtimeConfig).length > 0) conf.runtimeConfig = runtimeConfig;
    if (prevResult) conf.prevResult = prevResult;
    const out = await execCommand(binary, [], {
      timeoutMs: this.timeoutMs,
      input: JSON.stringify(conf),
      extraEnv: {
        CNI_COMMAND: command,
        CNI_CONTAINERID: attachment.containerId,
        CNI_NETNS: netns,
        CNI_IFNAME: attachment.ifname,
        CNI_ARGS: attachment.args,
        CNI_PATH: this.binDirs.join(':'),
      },
    });
    if (out.timedOut) throw new CniPluginError(plugin.type, command, networkName, undefined, `timed out after ${this.timeoutMs} ms`);
    if (out.code !== 0) {
      let detail = out.stderr.trim() || `exit code ${out.code}`;
      let code: number | undefined;
      try {
        const error = JSON.parse(out.stdout) as { code?: number; msg?: string; details?: string };
        code = error.code;
        detail = [error.msg, error.details].filter(Boolean).join(': ') || detail;
      } catch {
        /* not a CNI error object: keep stderr */
      }
      throw new CniPluginError(plugin.type, command, networkName, code, detail);
    }
    if (out.stdout.trim() === '') return undefined;
    try {
      return JSON.parse(out.stdout) as CniResult;
    } catch {
      throw new CniPluginError(plugin.type, command, networkName, undefined, `result is not JSON: ${out.stdout.slice(0, 200)}`);
    }
  }
}
