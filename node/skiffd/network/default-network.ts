// A fresh machine has no CNI config; skiffd then writes this one so pods get a network out of the box:
// a bridge with NAT to the outside, host-local addresses from a private /16, host ports through portmap.
import { writeFileAtomic } from '../util/atomic-file.ts';
import { join } from 'node:path';

export const DEFAULT_NETWORK_FILE = '10-skiff.conflist';

export interface DefaultNetworkOptions {
  name?: string;
  bridge?: string;
  subnet?: string;
  /** host-local's allocation dir; the plugin's own default (/var/lib/cni/networks) when unset. */
  ipamDataDir?: string;
}

export function defaultNetworkConfig(options: DefaultNetworkOptions = {}): object {
  const ipam: Record<string, unknown> = {
    type: 'host-local',
    ranges: [[{ subnet: options.subnet ?? '10.88.0.0/16' }]],
    routes: [{ dst: '0.0.0.0/0' }],
  };
  if (options.ipamDataDir) ipam.dataDir = options.ipamDataDir;
  return {
    cniVersion: '1.0.0',
    name: options.name ?? 'skiff',
    plugins: [
      { type: 'bridge', bridge: options.bridge ?? 'skiff0', isGateway: true, ipMasq: true, hairpinMode: true, ipam },
      { type: 'portmap', capabilities: { portMappings: true } },
      { type: 'loopback' },
    ],
  };
}

export async function writeDefaultNetwork(confDir: string, options: DefaultNetworkOptions = {}): Promise<string> {
  const file = join(confDir, DEFAULT_NETWORK_FILE);
  await writeFileAtomic(file, JSON.stringify(defaultNetworkConfig(options), null, 2) + '\n');
  return file;
}
