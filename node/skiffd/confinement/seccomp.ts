// The RuntimeDefault seccomp profile: an allow-list (seccomp-rules.ts) in the OCI spec's form. Calls
// not on it fail with EPERM; some are allowed only with the arguments that are safe (socket families,
// personality values, clone flags); capabilities the container holds unlock the calls they guard. The
// profile depends only on the architecture, the kernel and the capabilities that unlock calls, so each
// combination is built once and shared.
import { release } from 'node:os';
import {
  AF_VSOCK,
  ALLOWED,
  ALLOWED_BY_ARCH,
  ALLOWED_FROM_KERNEL_4_8,
  ALLOWED_WITH_CAPABILITY,
  CLONE_NAMESPACE_FLAGS,
  ENOSYS,
  PERSONALITIES,
} from './seccomp-rules.ts';

export interface SeccompArg {
  index: number;
  value: number;
  valueTwo?: number;
  op: 'SCMP_CMP_EQ' | 'SCMP_CMP_NE' | 'SCMP_CMP_MASKED_EQ';
}

export interface SeccompRule {
  names: string[];
  action: 'SCMP_ACT_ALLOW' | 'SCMP_ACT_ERRNO';
  errnoRet?: number;
  args?: SeccompArg[];
}

export interface SeccompProfile {
  defaultAction: 'SCMP_ACT_ERRNO';
  architectures?: string[];
  syscalls: SeccompRule[];
}

/** The architectures one filter must cover: the native one and the compat ABIs it can run. */
function architectures(arch: NodeJS.Architecture): string[] {
  switch (arch) {
    case 'x64':
      return ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32'];
    case 'arm64':
      return ['SCMP_ARCH_ARM', 'SCMP_ARCH_AARCH64'];
    case 'ia32':
      return ['SCMP_ARCH_X86'];
    case 'arm':
      return ['SCMP_ARCH_ARM'];
    case 's390x':
      return ['SCMP_ARCH_S390', 'SCMP_ARCH_S390X'];
    case 'riscv64':
      return ['SCMP_ARCH_RISCV64'];
    default:
      return [];
  }
}

/** Whether this kernel is 4.8 or later (where ptrace cannot get around a filter). */
export function kernelAtLeast48(kernelRelease: string = release()): boolean {
  const [major, minor] = kernelRelease.split('.').map((p) => Number.parseInt(p, 10));
  return major > 4 || (major === 4 && minor >= 8);
}

const built = new Map<string, SeccompProfile>();

/**
 * The profile for a container whose bounding set is `capabilities`. The same object is handed to every
 * container with the same unlocking capabilities: callers must not change it.
 */
export function defaultSeccompProfile(
  capabilities: readonly string[],
  arch: NodeJS.Architecture = process.arch,
  kernel48: boolean = kernelAtLeast48(),
): SeccompProfile {
  const unlocking = capabilities.filter((c) => c in ALLOWED_WITH_CAPABILITY).sort();
  const key = `${arch}|${kernel48}|${unlocking.join(',')}`;
  let profile = built.get(key);
  if (!profile) {
    profile = deepFreeze(buildProfile(new Set(unlocking), arch, kernel48));
    built.set(key, profile);
  }
  return profile;
}

function buildProfile(held: ReadonlySet<string>, arch: NodeJS.Architecture, kernel48: boolean): SeccompProfile {
  const allow = (names: readonly string[], args?: SeccompArg[]): SeccompRule => ({ names: [...names], action: 'SCMP_ACT_ALLOW', ...(args ? { args } : {}) });
  const rules: SeccompRule[] = [
    allow(ALLOWED),
    allow(['socket'], [{ index: 0, value: AF_VSOCK, op: 'SCMP_CMP_NE' }]),
    // One rule per value: the arguments of one rule must all hold, so alternatives are separate rules.
    ...PERSONALITIES.map((value) => allow(['personality'], [{ index: 0, value, op: 'SCMP_CMP_EQ' }])),
  ];
  if (kernel48) rules.push(allow(ALLOWED_FROM_KERNEL_4_8));
  const ownArch = ALLOWED_BY_ARCH[arch];
  if (ownArch) rules.push(allow(ownArch));
  for (const [capability, names] of Object.entries(ALLOWED_WITH_CAPABILITY)) if (held.has(capability)) rules.push(allow(names));
  if (!held.has('CAP_SYS_ADMIN')) {
    // s390's clone takes its flags second.
    const flagsAt = arch === 's390x' ? 1 : 0;
    rules.push(allow(['clone'], [{ index: flagsAt, value: CLONE_NAMESPACE_FLAGS, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }]));
    rules.push({ names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS });
  }
  const arches = architectures(arch);
  return { defaultAction: 'SCMP_ACT_ERRNO', ...(arches.length > 0 ? { architectures: arches } : {}), syscalls: rules };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
