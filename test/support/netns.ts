// Helpers for pod/network tests: a private CNI network per test file (own conf dir, bridge name, subnet
// and host-local data dir, so nothing touches /etc/cni or /var/lib/cni), commands run inside a pod's
// namespaces, and probes for the leftovers a pod must not leave (mounts, veths, iptables rules).
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes, randomInt } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { defaultNetworkConfig } from '../../node/skiffd/network/default-network.ts';

const run = promisify(execFile);

export interface TestNetwork {
  confDir: string;
  ipamDir: string;
  name: string;
  bridge: string;
  /** e.g. 10.213.57.0/24 */
  subnet: string;
  /** Removes the bridge the network created (the CNI bridge plugin never deletes it). */
  cleanup(): Promise<void>;
}

/** Writes a network like skiffd's default one, with names and a subnet private to this test. */
export function createTestNetwork(dir: string): TestNetwork {
  const tag = randomBytes(3).toString('hex');
  const name = `skifftest-${tag}`;
  const bridge = `skt${tag}`;
  const subnet = `10.${randomInt(200, 250)}.${randomInt(0, 256)}.0/24`;
  const confDir = join(dir, 'net.d');
  const ipamDir = join(dir, 'ipam');
  mkdirSync(confDir, { recursive: true });
  writeFileSync(join(confDir, '10-test.conflist'), JSON.stringify(defaultNetworkConfig({ name, bridge, subnet, ipamDataDir: ipamDir }), null, 2));
  return {
    confDir,
    ipamDir,
    name,
    bridge,
    subnet,
    cleanup: async () => {
      await run('ip', ['link', 'del', bridge], { timeout: 10_000 }).catch(() => {});
    },
  };
}

export function skiffdNetworkConfig(net: TestNetwork): string {
  return `[cni]\nconf_dir = ${JSON.stringify(net.confDir)}\nbin_dir = "/usr/lib/cni"\n`;
}

/** Runs a command in the given namespaces (nsenter), bounded; returns stdout. */
export async function inNamespaces(ns: { net?: string; uts?: string; ipc?: string; pid?: string }, argv: string[]): Promise<string> {
  const enter = Object.entries(ns)
    .filter(([, path]) => path)
    .map(([kind, path]) => `--${kind}=${path}`);
  const { stdout } = await run('nsenter', [...enter, '--', ...argv], { timeout: 10_000 });
  return stdout;
}

/** Mount points of namespace bind mounts under `dir`. */
export function nsfsMountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((line) => line.includes(' - nsfs '))
    .map((line) => line.split(' ')[4])
    .filter((mountPoint) => mountPoint.startsWith(dir));
}

/** The filesystem type mounted at exactly `path`, or undefined. */
export function mountTypeAt(path: string): string | undefined {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const dash = line.indexOf(' - ');
    if (dash >= 0 && line.slice(0, dash).split(' ')[4] === path) return line.slice(dash + 3).split(' ')[0];
  }
  return undefined;
}

export async function linkExists(name: string): Promise<boolean> {
  return run('ip', ['link', 'show', 'dev', name], { timeout: 10_000 }).then(
    () => true,
    () => false,
  );
}

/** NAT rules that mention `text` (CNI plugins tag theirs with the container id). */
export async function natRulesMentioning(text: string): Promise<string[]> {
  const { stdout } = await run('iptables-save', ['-t', 'nat'], { timeout: 10_000 });
  return stdout.split('\n').filter((line) => line.includes(text));
}

/**
 * Starts busybox `nc -l` inside a network namespace, answering one connection with `reply`.
 * Returns a stopper; the listener is also bounded by `timeout` so it can never outlive the test long.
 */
export function serveOnceInNetns(netns: string, port: number, reply: string): { stop(): void; ready: Promise<void> } {
  const child = spawn('timeout', ['60', 'nsenter', `--net=${netns}`, '--', 'busybox', 'nc', '-l', '-p', String(port), '-e', 'echo', reply], {
    stdio: 'ignore',
    detached: true,
  });
  const ready = (async () => {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const { stdout } = await run('nsenter', [`--net=${netns}`, '--', 'busybox', 'netstat', '-ltn'], { timeout: 10_000 });
      if (stdout.includes(`:${port} `)) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`nc did not listen on port ${port} in ${netns} within 30 s`);
  })();
  return {
    ready,
    stop: () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    },
  };
}

/** Connects to host:port and returns what the server sent before closing (bounded). */
export function readFromPort(host: string, port: number, timeoutMs = 15_000): Promise<string> {
  return new Promise((resolve, reject) => {
    import('node:net').then(({ connect }) => {
      const socket = connect(port, host);
      let data = '';
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no reply from ${host}:${port} within ${timeoutMs} ms (got ${JSON.stringify(data)})`));
      }, timeoutMs);
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => (data += d));
      socket.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(data);
      });
    }, reject);
  });
}

/** A free TCP port on the host right now (for a host port mapping). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** The IPv4 address of the interface the default route leaves by (/proc/net/route); none on a machine without one. */
export function defaultRouteAddress(): string | undefined {
  let routes: string;
  try {
    routes = readFileSync('/proc/net/route', 'utf8');
  } catch {
    return undefined;
  }
  const dflt = routes
    .split('\n')
    .map((l) => l.split('\t'))
    .find((f) => f[1] === '00000000');
  return networkInterfaces()[dflt?.[0] ?? '']?.find((a) => a.family === 'IPv4')?.address;
}

/** A network namespace of the test's own, joined to the host by a veth pair on a private /30. */
export interface VethNamespace {
  /** The name `ip netns` knows it by. */
  name: string;
  /** The host end's address (10.a.b.c). */
  hostAddress: string;
  /** The namespace end's address: servers inside listen here, the host reaches it over the veth. */
  address: string;
  /** Deletes the namespace (its veth end, and so the pair, goes with it) and the host end if left. */
  cleanup(): Promise<void>;
}

const VETH_NS_PREFIX = 'skiff-vethns-';

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * What a crashed run of createVethNamespace left: its namespaces and veths carry the creating
 * process's pid, and those of a process that is gone are deleted.
 */
async function removeDeadVethNamespaces(): Promise<void> {
  const { stdout: ns } = await run('ip', ['netns', 'list'], { timeout: 10_000 });
  for (const m of ns.matchAll(new RegExp(`^${VETH_NS_PREFIX}(\\d+)-\\S+`, 'gm')))
    if (!pidAlive(Number(m[1]))) await run('ip', ['netns', 'del', m[0]], { timeout: 10_000 }).catch(() => {});
  const { stdout: links } = await run('ip', ['-o', 'link', 'show'], { timeout: 10_000 });
  for (const m of links.matchAll(/^\d+: (skv(\d+)[hn][0-9a-f]*)[@:]/gm))
    if (!pidAlive(Number(m[2]))) await run('ip', ['link', 'del', m[1]], { timeout: 10_000 }).catch(() => {});
}

/**
 * Makes a namespace with a veth pair on a random 10.x.y.z/30 not already on this machine (as the CNI
 * tests pick their subnets), both ends up. Needs root and `ip`.
 */
export async function createVethNamespace(): Promise<VethNamespace> {
  await removeDeadVethNamespaces();
  const tag = randomBytes(2).toString('hex');
  const name = `${VETH_NS_PREFIX}${process.pid}-${tag}`;
  // At most 15 characters: skv + pid (up to 7 digits) + h/n + 4 hex.
  const hostIf = `skv${process.pid}h${tag}`;
  const nsIf = `skv${process.pid}n${tag}`;
  const { stdout: inUse } = await run('ip', ['-4', '-o', 'addr', 'show'], { timeout: 10_000 });
  let base = '';
  for (let i = 0; i < 20 && (!base || inUse.includes(` ${base}.`)); i++) base = `10.${randomInt(200, 250)}.${randomInt(0, 256)}`;
  const last = 4 * randomInt(0, 64);
  const hostAddress = `${base}.${last + 1}`;
  const address = `${base}.${last + 2}`;
  const cleanup = async () => {
    await run('ip', ['netns', 'del', name], { timeout: 10_000 }).catch(() => {});
    if (await linkExists(hostIf)) await run('ip', ['link', 'del', hostIf], { timeout: 10_000 }).catch(() => {});
  };
  try {
    const ip = (...args: string[]) => run('ip', args, { timeout: 10_000 });
    await ip('netns', 'add', name);
    await ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf);
    await ip('link', 'set', nsIf, 'netns', name);
    await ip('addr', 'add', `${hostAddress}/30`, 'dev', hostIf);
    await ip('link', 'set', hostIf, 'up');
    await ip('netns', 'exec', name, 'ip', 'addr', 'add', `${address}/30`, 'dev', nsIf);
    await ip('netns', 'exec', name, 'ip', 'link', 'set', nsIf, 'up');
    await ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
  } catch (err) {
    await cleanup();
    throw err;
  }
  return { name, hostAddress, address, cleanup };
}
