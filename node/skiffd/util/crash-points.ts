// Named points where a crash leaves the most to recover, for tests that prove recovery: with
// SKIFFD_CRASH_AT=NAME in its environment the daemon kills itself (SIGKILL, as the OOM killer or a
// power cut would) when it reaches NAME. Unset, a point costs one comparison.
const crashAt = process.env.SKIFFD_CRASH_AT;

export type CrashPoint =
  /** CreateContainer: a one-layer image volume bound, not yet remounted read-only. */
  | 'image-volume-bound'
  /** CreateContainer: the rootfs and every image volume mounted, the record not yet written. */
  | 'create-container-mounted';

export function crashPoint(name: CrashPoint): void {
  if (crashAt === name) process.kill(process.pid, 'SIGKILL');
}
