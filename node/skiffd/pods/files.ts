// The small files every container of a pod bind-mounts: /etc/resolv.conf, /etc/hostname, /etc/hosts.
import { readFile, writeFile } from 'node:fs/promises';

export interface DnsSettings {
  servers: string[];
  searches: string[];
  options: string[];
}

/** The client's DNS config, or a copy of the host's resolv.conf when it gave none. */
export async function resolvConf(dns: DnsSettings | undefined, hostResolvConf = '/etc/resolv.conf'): Promise<string> {
  if (dns && (dns.servers.length > 0 || dns.searches.length > 0 || dns.options.length > 0)) {
    const lines: string[] = [];
    if (dns.searches.length > 0) lines.push(`search ${dns.searches.join(' ')}`);
    for (const server of dns.servers) lines.push(`nameserver ${server}`);
    if (dns.options.length > 0) lines.push(`options ${dns.options.join(' ')}`);
    return lines.join('\n') + '\n';
  }
  try {
    return await readFile(hostResolvConf, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw err;
  }
}

export function hostsFile(hostname: string, ip: string): string {
  const lines = [
    '127.0.0.1\tlocalhost',
    '::1\tlocalhost ip6-localhost ip6-loopback',
    'fe00::0\tip6-localnet',
    'fe00::0\tip6-mcastprefix',
    'fe00::1\tip6-allnodes',
    'fe00::2\tip6-allrouters',
  ];
  if (ip && hostname) lines.push(`${ip}\t${hostname}`);
  return lines.join('\n') + '\n';
}

type PodFiles = { resolvConf: string; hostname: string; hosts: string };

/** Writes the given files (any subset: hosts waits for the pod's IP, the others need not). */
export async function writePodFiles(paths: Partial<PodFiles>, content: Partial<PodFiles>): Promise<void> {
  // Not atomic on purpose: they are written before the pod record exists, and a pod whose record
  // never got written is rolled back, files included.
  const jobs: Promise<void>[] = [];
  if (paths.resolvConf && content.resolvConf !== undefined) jobs.push(writeFile(paths.resolvConf, content.resolvConf, { mode: 0o644 }));
  if (paths.hostname && content.hostname !== undefined) jobs.push(writeFile(paths.hostname, `${content.hostname}\n`, { mode: 0o644 }));
  if (paths.hosts && content.hosts !== undefined) jobs.push(writeFile(paths.hosts, content.hosts, { mode: 0o644 }));
  await Promise.all(jobs);
}
