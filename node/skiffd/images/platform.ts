// The host platform and picking the matching entry of an index / manifest list.
import { readFileSync } from 'node:fs';
import type { Descriptor, Platform } from './manifest.ts';

const ARCH: Record<string, string> = {
  x64: 'amd64',
  arm64: 'arm64',
  arm: 'arm',
  ia32: '386',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
};

let cached: HostPlatform | undefined;

export interface HostPlatform extends Platform {
  /** Variants the host can run, best first. */
  acceptedVariants: string[];
}

export function hostPlatform(): HostPlatform {
  if (cached) return cached;
  const architecture = ARCH[process.arch] ?? process.arch;
  let variant: string | undefined;
  let accepted: string[] = [''];
  if (architecture === 'arm64') {
    variant = 'v8';
    accepted = ['v8', ''];
  } else if (architecture === 'arm') {
    const level = armLevel();
    variant = `v${level}`;
    accepted = [];
    for (let v = level; v >= 5; v--) accepted.push(`v${v}`);
    accepted.push('');
  } else if (architecture === 'amd64') {
    const level = amd64Level();
    accepted = [];
    for (let v = level; v >= 2; v--) accepted.push(`v${v}`);
    accepted.push('', 'v1');
  }
  cached = { os: 'linux', architecture, variant, acceptedVariants: accepted };
  return cached;
}

/** The entry for `want` (default: the host), preferring the best variant it can run; undefined if none. */
export function pickPlatform(manifests: Descriptor[], want: HostPlatform = hostPlatform()): Descriptor | undefined {
  let best: Descriptor | undefined;
  let bestRank = Infinity;
  for (const m of manifests) {
    const p = m.platform;
    if (!p || p.os !== want.os || p.architecture !== want.architecture) continue;
    const rank = want.acceptedVariants.indexOf(p.variant ?? '');
    if (rank >= 0 && rank < bestRank) {
      best = m;
      bestRank = rank;
    }
  }
  if (best) return best;
  // An index whose only entry names no platform (some single-arch builds): take it.
  const unlabelled = manifests.filter((m) => !m.platform);
  return manifests.length === 1 && unlabelled.length === 1 ? unlabelled[0] : undefined;
}

export function formatPlatform(p: Platform): string {
  return `${p.os}/${p.architecture}${p.variant ? `/${p.variant}` : ''}`;
}

function cpuinfo(): string {
  try {
    return readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return '';
  }
}

function armLevel(): number {
  const m = /CPU architecture\s*:\s*(\d+)/.exec(cpuinfo());
  const n = m ? Number(m[1]) : 7;
  return n >= 8 ? 7 : Math.max(5, n); // 32-bit userland on ARMv8 runs v7 code
}

// x86-64 micro-architecture levels, from the CPU flags the kernel reports.
function amd64Level(): number {
  const m = /^flags\s*:(.*)$/m.exec(cpuinfo());
  if (!m) return 1;
  const flags = new Set(m[1].trim().split(/\s+/));
  const has = (...names: string[]) => names.every((n) => flags.has(n));
  if (!has('cx16', 'lahf_lm', 'popcnt', 'sse4_1', 'sse4_2', 'ssse3')) return 1;
  if (!has('avx', 'avx2', 'bmi1', 'bmi2', 'f16c', 'fma', 'abm', 'movbe', 'xsave')) return 2;
  if (!has('avx512f', 'avx512bw', 'avx512cd', 'avx512dq', 'avx512vl')) return 3;
  return 4;
}
