// The RuntimeDefault seccomp profile: allow everything except the syscalls the field's default
// profiles (Docker, containerd, CRI-O) deny, each returning EPERM. Syscalls a capability legitimately
// needs stay allowed when the container holds that capability, as in those profiles.

/** Denied unless the container has the capability named. */
const GATED: Record<string, string[]> = {
  CAP_SYS_ADMIN: [
    'bpf',
    'fanotify_init',
    'fsconfig',
    'fsmount',
    'fsopen',
    'fspick',
    'lookup_dcookie',
    'mount',
    'mount_setattr',
    'move_mount',
    'name_to_handle_at',
    'open_tree',
    'perf_event_open',
    'quotactl',
    'quotactl_fd',
    'setns',
    'syslog',
    'umount',
    'umount2',
    'unshare',
  ],
  CAP_SYS_BOOT: ['reboot'],
  CAP_SYS_CHROOT: ['chroot'],
  CAP_SYS_MODULE: ['delete_module', 'init_module', 'finit_module'],
  CAP_SYS_PACCT: ['acct'],
  CAP_SYS_PTRACE: ['kcmp', 'pidfd_getfd', 'process_madvise', 'process_vm_readv', 'process_vm_writev', 'ptrace'],
  CAP_SYS_RAWIO: ['iopl', 'ioperm'],
  CAP_SYS_TIME: ['settimeofday', 'stime', 'clock_settime', 'clock_settime64', 'clock_adjtime', 'clock_adjtime64'],
  CAP_SYS_TTY_CONFIG: ['vhangup'],
  CAP_SYS_NICE: ['get_mempolicy', 'mbind', 'set_mempolicy', 'set_mempolicy_home_node', 'move_pages'],
  CAP_SYSLOG: ['syslog'],
  CAP_BPF: ['bpf'],
  CAP_PERFMON: ['perf_event_open'],
};

/** Denied whatever the capabilities: obsolete, host-wide, or keyring/kernel-exec interfaces. */
const ALWAYS = [
  'add_key',
  'create_module',
  'get_kernel_syms',
  'kexec_file_load',
  'kexec_load',
  'keyctl',
  'nfsservctl',
  'open_by_handle_at',
  'query_module',
  'request_key',
  'swapoff',
  'swapon',
  'sysfs',
  '_sysctl',
  'uselib',
  'userfaultfd',
  'ustat',
  'vm86',
  'vm86old',
];

/** The architectures one filter must cover: the native one and the compat ABIs it can run. */
function architectures(arch: string): string[] {
  if (arch === 'x64') return ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32'];
  if (arch === 'arm64') return ['SCMP_ARCH_AARCH64', 'SCMP_ARCH_ARM'];
  if (arch === 'ia32') return ['SCMP_ARCH_X86'];
  if (arch === 'arm') return ['SCMP_ARCH_ARM'];
  return [];
}

export interface SeccompProfile {
  defaultAction: string;
  architectures?: string[];
  syscalls: { names: string[]; action: string; errnoRet?: number }[];
}

export function defaultSeccompProfile(capabilities: string[], arch: string = process.arch): SeccompProfile {
  const held = new Set(capabilities);
  const denied = new Set(ALWAYS);
  const allowed = new Set<string>();
  for (const [cap, calls] of Object.entries(GATED)) {
    for (const c of calls) (held.has(cap) ? allowed : denied).add(c);
  }
  // A syscall gated by two capabilities (bpf, perf_event_open, syslog) is allowed by either.
  for (const c of allowed) denied.delete(c);
  const arches = architectures(arch);
  return {
    defaultAction: 'SCMP_ACT_ALLOW',
    ...(arches.length > 0 ? { architectures: arches } : {}),
    syscalls: [{ names: [...denied].sort(), action: 'SCMP_ACT_ERRNO', errnoRet: 1 }],
  };
}
