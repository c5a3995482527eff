// Linux capability names and the set a container gets when it asks for nothing special.

/** Every capability by number (0..40), as the kernel headers order them. */
export const ALL_CAPABILITIES = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_DAC_READ_SEARCH',
  'CAP_FOWNER',
  'CAP_FSETID',
  'CAP_KILL',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETPCAP',
  'CAP_LINUX_IMMUTABLE',
  'CAP_NET_BIND_SERVICE',
  'CAP_NET_BROADCAST',
  'CAP_NET_ADMIN',
  'CAP_NET_RAW',
  'CAP_IPC_LOCK',
  'CAP_IPC_OWNER',
  'CAP_SYS_MODULE',
  'CAP_SYS_RAWIO',
  'CAP_SYS_CHROOT',
  'CAP_SYS_PTRACE',
  'CAP_SYS_PACCT',
  'CAP_SYS_ADMIN',
  'CAP_SYS_BOOT',
  'CAP_SYS_NICE',
  'CAP_SYS_RESOURCE',
  'CAP_SYS_TIME',
  'CAP_SYS_TTY_CONFIG',
  'CAP_MKNOD',
  'CAP_LEASE',
  'CAP_AUDIT_WRITE',
  'CAP_AUDIT_CONTROL',
  'CAP_SETFCAP',
  'CAP_MAC_OVERRIDE',
  'CAP_MAC_ADMIN',
  'CAP_SYSLOG',
  'CAP_WAKE_ALARM',
  'CAP_BLOCK_SUSPEND',
  'CAP_AUDIT_READ',
  'CAP_PERFMON',
  'CAP_BPF',
  'CAP_CHECKPOINT_RESTORE',
] as const;

/** The default set the field settled on (containerd's and Docker's list). */
export const DEFAULT_CAPABILITIES = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FSETID',
  'CAP_FOWNER',
  'CAP_MKNOD',
  'CAP_NET_RAW',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETFCAP',
  'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_SYS_CHROOT',
  'CAP_KILL',
  'CAP_AUDIT_WRITE',
];

/**
 * The capabilities in a /proc/PID/status mask (`CapBnd: 000001fffeffffff`). "All capabilities" for a
 * privileged container means the daemon's bounding set: a VM may withhold some (CAP_SYS_RESOURCE
 * here), and asking runc for one it cannot grant fails the start.
 */
export function capabilitiesFromMask(hex: string): string[] {
  const mask = BigInt(`0x${hex.trim() || '0'}`);
  return ALL_CAPABILITIES.filter((_, bit) => (mask >> BigInt(bit)) & 1n);
}

/** 'net_admin', 'NET_ADMIN', 'CAP_NET_ADMIN' -> 'CAP_NET_ADMIN'; undefined if unknown. 'ALL' stays 'ALL'. */
export function normalizeCapability(name: string): string | undefined {
  const upper = name.trim().toUpperCase();
  if (upper === 'ALL') return 'ALL';
  const full = upper.startsWith('CAP_') ? upper : `CAP_${upper}`;
  return (ALL_CAPABILITIES as readonly string[]).includes(full) ? full : undefined;
}
