// skiffd's default AppArmor profile, generated for what this kernel mediates. It allows what a
// workload normally does (files, network, capabilities the OCI spec grants) and denies what lets a
// container reach past its own boundary, as the field's default profiles do: mounting, writing the
// kernel's knobs under /proc and /sys, reading firmware and security state, and signals or ptrace
// across the profile's boundary. Workloads that need any of it ask for Unconfined or a profile of
// their own.

export const DEFAULT_PROFILE_NAME = 'skiffd-default';

export interface ProfileAbilities {
  /** The kernel mediates signals (securityfs `features/signal`). */
  signal: boolean;
  /** The kernel mediates ptrace (securityfs `features/ptrace`). */
  ptrace: boolean;
  /**
   * apparmor_parser knows AppArmor 3.0's ABI (its `abi/3.0` file; AppArmor 3.0 and later). The profile
   * then pins it: a 4.x parser compiles a profile without one for every feature its kernel mediates, so
   * on Debian 13 (AppArmor 4.1, Linux 6.12) the rules below would refuse user namespaces (EACCES on
   * unshare and clone) that seccomp and the container's capabilities allow, and, on kernels that mediate
   * unix sockets apart from `network`, unix sockets too. The field's default profiles pin 3.0 as well.
   */
  abi3: boolean;
}

/** The profile's text for apparmor_parser. Self-contained: no includes, so it loads on any AppArmor from 2.x to 4.x. */
export function defaultProfile(name: string, abilities: ProfileAbilities): string {
  const rules = [
    'network,',
    'capability,',
    'file,',
    'umount,',
    '',
    '# No new mounts: a mount could uncover what the runtime masked or bound read-only.',
    'deny mount,',
    '',
    "# /proc: a process's own entries stay writable; nothing else at the top level is.",
    'deny /proc/{[^0-9s]*,s,s[^y]*,sy,sy[^s]*,sys?*}{,/**} w,',
    'deny /proc/{kcore,sysrq-trigger} rwklx,',
    "# /proc/sys: only the IPC namespace's own settings (kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*).",
    'deny /proc/sys/{[^kf]**,k[^e]**,f[^s]**,fs/[^m]**,fs/m[^q]**} w,',
    'deny /proc/sys/kernel/{[^sm]**,s,s[^he]**,sh,sh[^m]**,se,se[^m]**,sem?**,m,m[^s]**,ms,ms[^g]**} w,',
    '',
    '# /sys: read-only but for cgroupfs; firmware, powercap and LSM state not even readable.',
    'deny /sys/{[^f]**,f[^s]**,fs/[^c]**,fs/c[^g]**,fs/cg[^r]**} wklx,',
    'deny /sys/firmware/** rwklx,',
    'deny /sys/devices/virtual/powercap/** rwklx,',
    'deny /sys/kernel/security/** rwklx,',
  ];
  if (abilities.signal) {
    rules.push(
      '',
      '# Signals from the node (the runtime stopping it) and within the container; none to anything else.',
      'signal (receive) peer=unconfined,',
      '# runc and crun under the profiles AppArmor 4 ships for them (Debian 13, Ubuntu 24.04): they kill the container.',
      'signal (receive) peer=runc,',
      'signal (receive) peer=crun,',
      `signal (send,receive) peer=${name},`,
    );
  }
  if (abilities.ptrace) {
    rules.push('', '# ptrace and /proc reads of processes only within the profile.', `ptrace (trace,read,tracedby,readby) peer=${name},`);
  }
  const abi = abilities.abi3 ? ['abi <abi/3.0>,', ''] : [];
  return [...abi, `profile ${name} flags=(attach_disconnected,mediate_deleted) {`, ...rules.map((r) => (r ? `  ${r}` : '')), '}', ''].join('\n');
}
