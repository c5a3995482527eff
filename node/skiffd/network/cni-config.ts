// Reads CNI network configuration the way the CNI spec's runtimes do: the lexically first file in the
// conf dir ending in .conflist, .conf or .json that parses. A single-plugin .conf becomes a one-plugin list.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface CniPluginConf {
  type: string;
  capabilities?: Record<string, boolean>;
  [key: string]: unknown;
}

export interface CniNetworkList {
  name: string;
  cniVersion: string;
  disableCheck?: boolean;
  plugins: CniPluginConf[];
  /** The file this came from. */
  source: string;
}

export interface LoadedNetwork {
  network?: CniNetworkList;
  /** Files that were skipped, with why (reported by Status when nothing loads). */
  problems: string[];
}

const EXTENSIONS = ['.conflist', '.conf', '.json'];

export function parseNetworkConfig(text: string, source: string): CniNetworkList {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`${source}: not JSON: ${(err as Error).message}`);
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${source}: not a JSON object`);
  const obj = raw as Record<string, unknown>;
  if (typeof obj.name !== 'string' || obj.name === '') throw new Error(`${source}: "name" is missing`);
  const cniVersion = typeof obj.cniVersion === 'string' && obj.cniVersion ? obj.cniVersion : '0.2.0';
  if (Array.isArray(obj.plugins)) {
    if (obj.plugins.length === 0) throw new Error(`${source}: "plugins" is empty`);
    const plugins = obj.plugins.map((p, i) => {
      if (!p || typeof p !== 'object' || typeof (p as CniPluginConf).type !== 'string' || !(p as CniPluginConf).type) {
        throw new Error(`${source}: plugins[${i}] has no "type"`);
      }
      return p as CniPluginConf;
    });
    return { name: obj.name, cniVersion, disableCheck: obj.disableCheck === true, plugins, source };
  }
  if (typeof obj.type !== 'string' || obj.type === '') throw new Error(`${source}: neither "plugins" nor "type" is set`);
  const { name: _name, cniVersion: _version, ...plugin } = obj;
  return { name: obj.name, cniVersion, plugins: [plugin as CniPluginConf], source };
}

/** The network skiffd uses now, or none (with reasons) when the conf dir holds no usable file. */
export async function loadNetwork(confDir: string): Promise<LoadedNetwork> {
  let names: string[];
  try {
    names = await readdir(confDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { problems: [`${confDir} does not exist`] };
    throw err;
  }
  const problems: string[] = [];
  for (const name of names.filter((n) => EXTENSIONS.some((e) => n.endsWith(e)) && !n.startsWith('.')).sort()) {
    const file = join(confDir, name);
    try {
      return { network: parseNetworkConfig(await readFile(file, 'utf8'), file), problems };
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (problems.length === 0) problems.push(`no network config (*.conflist, *.conf, *.json) in ${confDir}`);
  return { problems };
}

/** Plugin binaries a network needs: every plugin's type and the IPAM plugins they delegate to. */
export function requiredPluginTypes(network: CniNetworkList): string[] {
  const types = new Set<string>();
  for (const plugin of network.plugins) {
    types.add(plugin.type);
    const ipam = plugin.ipam as { type?: unknown } | undefined;
    if (ipam && typeof ipam.type === 'string' && ipam.type) types.add(ipam.type);
  }
  return [...types];
}
