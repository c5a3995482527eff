// A tiny container root filesystem built from the host's static busybox (Debian's busybox-static),
// for tests that need something runc can run without pulling an image.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BUSYBOX = '/bin/busybox';

export interface BusyboxRootfs {
  /** The directory holding the filesystem (usable as one overlayfs lower layer). */
  dir: string;
  /** Removes the directory. */
  remove(): void;
}

export interface RootfsOptions {
  /** Parent directory for the new rootfs (default: the OS temp dir). */
  parent?: string;
  /** Extra lines for /etc/passwd (name:x:uid:gid:gecos:home:shell). */
  passwd?: string[];
  /** Extra lines for /etc/group (name:x:gid:members). */
  group?: string[];
}

/**
 * Builds /bin/busybox plus one symlink per applet, and a minimal /etc (root and nobody users,
 * a `wheel` group root belongs to) so user and group lookups inside the image can be tested.
 */
export function makeBusyboxRootfs(options: RootfsOptions = {}): BusyboxRootfs {
  const dir = mkdtempSync(join(options.parent ?? tmpdir(), 'skiff-rootfs-'));
  for (const sub of ['bin', 'sbin', 'usr/bin', 'usr/sbin', 'etc', 'proc', 'sys', 'dev', 'tmp', 'root', 'home', 'var', 'run']) {
    mkdirSync(join(dir, sub), { recursive: true });
  }
  chmodSync(join(dir, 'tmp'), 0o1777);
  copyFileSync(BUSYBOX, join(dir, 'bin/busybox'));
  chmodSync(join(dir, 'bin/busybox'), 0o755);
  const applets = execFileSync(BUSYBOX, ['--list'], { encoding: 'utf8' })
    .split('\n')
    .filter((a) => a && a !== 'busybox');
  for (const applet of applets) symlinkSync('busybox', join(dir, 'bin', applet));
  const passwd = ['root:x:0:0:root:/root:/bin/sh', 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false', ...(options.passwd ?? [])];
  const group = ['root:x:0:', 'wheel:x:10:root', 'nogroup:x:65534:', ...(options.group ?? [])];
  writeFileSync(join(dir, 'etc/passwd'), passwd.join('\n') + '\n');
  writeFileSync(join(dir, 'etc/group'), group.join('\n') + '\n');
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
