// A private CNI network per runtime under test: own conf dir, bridge name, subnet and host-local data
// dir, so the benchmark never reads /etc/cni/net.d or /var/lib/cni and the two runtimes never share
// a bridge. Subnets come from 10.180-199.x.0/24 (the tests use 10.200-250).
import { mkdirSync, writeFileSync } from 'node:fs';
import { randomBytes, randomInt } from 'node:crypto';
import { join } from 'node:path';
import { defaultNetworkConfig } from '../../node/skiffd/network/default-network.ts';
import { deleteLink } from './host.ts';

export interface BenchNetwork {
  confDir: string;
  bridge: string;
  subnet: string;
  cleanup(): Promise<void>;
}

/**
 * `prefix` (3 letters) names the bridge. containerd adds the loopback interface itself, so its
 * chain is bridge + portmap; skiffd's is its own default (bridge + portmap + loopback).
 */
export function createNetwork(dir: string, prefix: string, flavour: 'skiffd' | 'containerd' | 'containerd2'): BenchNetwork {
  const tag = randomBytes(3).toString('hex');
  const bridge = `${prefix}${tag}`;
  // Disjoint second octets per flavour, so the networks of one run can never overlap.
  const [low, high] = flavour === 'skiffd' ? [180, 190] : flavour === 'containerd' ? [190, 195] : [195, 200];
  const subnet = `10.${randomInt(low, high)}.${randomInt(0, 256)}.0/24`;
  const confDir = join(dir, 'net.d');
  mkdirSync(confDir, { recursive: true });
  const config = defaultNetworkConfig({ name: `bench-${prefix}-${tag}`, bridge, subnet, ipamDataDir: join(dir, 'ipam') }) as { plugins: { type: string }[] };
  if (flavour !== 'skiffd') config.plugins = config.plugins.filter((p) => p.type !== 'loopback');
  writeFileSync(join(confDir, '10-bench.conflist'), JSON.stringify(config, null, 2));
  return { confDir, bridge, subnet, cleanup: () => deleteLink(bridge) };
}
