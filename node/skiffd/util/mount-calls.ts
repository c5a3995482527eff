// mount(2) and umount2(2) for the daemon, made by one long-lived Perl process (perl-base is part of
// every Debian system) instead of an exec of mount(8) per call. mount(8) links libmount, libblkid and
// libselinux at every start; on a slow CPU that start is what a mount costs (about 80 ms under an
// emulated CPU, where the system call itself takes well under one), and CreateContainer mounts the
// container's root filesystem. Where Perl or the architecture's call numbers are missing, mount(8) and
// umount(8) do the same work.
//
// Protocol: one request per line, its fields percent-encoded and separated by spaces
// ("mount SOURCE TARGET FSTYPE FLAGS DATA" or "umount TARGET FLAGS"); one answer per line, "ok" or
// "err ERRNO MESSAGE". Requests go one at a time.
import { spawn, type ChildProcess } from 'node:child_process';
import { runCommand } from './command.ts';
import { killGroup } from './kill-group.ts';

const SCRIPT = `use strict; use warnings;
my ($mount_nr, $umount_nr) = @ARGV;
$| = 1;
sub field { my $s = shift; $s =~ s/%([0-9A-Fa-f]{2})/chr(hex($1))/ge; return $s }
while (my $line = <STDIN>) {
  chomp $line;
  my ($op, @f) = map { field($_) } split(/ /, $line, -1);
  my $r = -1;
  $! = 22;
  if ($op eq 'mount' && @f == 5) { $r = syscall($mount_nr, $f[0], $f[1], $f[2], 0 + $f[3], $f[4]) }
  elsif ($op eq 'umount' && @f == 2) { $r = syscall($umount_nr, $f[0], 0 + $f[1]) }
  if ($r == 0) { print "ok\\n" } else { printf("err %d %s\\n", $! + 0, "$!") }
}
`;

/** mount(2) and umount2(2) by architecture; elsewhere mount(8) is used. */
const CALL_NUMBERS: Partial<Record<NodeJS.Architecture, [mount: number, umount2: number]>> = { x64: [165, 166], arm64: [40, 39] };

export type MountFlag = 'ro' | 'nosuid' | 'nodev' | 'noexec';
const FLAG_BITS: Record<MountFlag | 'bind' | 'remount', number> = { ro: 1, nosuid: 2, nodev: 4, noexec: 8, remount: 32, bind: 4096 };
const MNT_DETACH = 2;

export interface MountRequest {
  source: string;
  target: string;
  fstype: string;
  flags?: MountFlag[];
  /** The filesystem's own options (overlay's lowerdir=...). */
  data?: string;
}

/** A failed mount or unmount: `errno` is the kernel's (EBUSY, EINVAL...), or absent when mount(8) failed. */
export class MountError extends Error {
  readonly errno: string | undefined;
  constructor(message: string, errno?: string) {
    super(message);
    this.errno = errno;
  }
}

/** The mount(2) data page is 4096 bytes: filesystem options (overlay's lower dirs) must stay clear of it. */
export const MAX_MOUNT_DATA = 4000;

const ERRNO_NAMES: Record<number, string> = { 1: 'EPERM', 2: 'ENOENT', 13: 'EACCES', 16: 'EBUSY', 19: 'ENODEV', 20: 'ENOTDIR', 22: 'EINVAL' };
const TIMEOUT_MS = 30_000;

interface Call {
  line: string;
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

class MountProcess {
  private readonly child: ChildProcess;
  private readonly queue: Call[] = [];
  private current: Call | undefined;
  private buffered = '';
  dead = false;

  constructor(numbers: [number, number]) {
    this.child = spawn('perl', ['-e', SCRIPT, String(numbers[0]), String(numbers[1])], { stdio: ['pipe', 'pipe', 'ignore'], detached: true });
    this.child.unref();
    for (const s of [this.child.stdin, this.child.stdout] as (NodeJS.ReadableStream & { unref?: () => void })[]) s.unref?.();
    this.child.stdin!.on('error', () => this.fail(new Error('the mount helper closed its input')));
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => this.read(d));
    this.child.on('error', (err) => this.fail(err));
    this.child.on('exit', () => this.fail(new Error('the mount helper exited')));
  }

  call(line: string, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const call: Call = { line, resolve, reject, timer: undefined as unknown as NodeJS.Timeout };
      call.timer = setTimeout(() => {
        const queued = this.queue.indexOf(call);
        if (queued >= 0) this.queue.splice(queued, 1);
        // A call stuck in the kernel: the helper goes, and the next call starts another.
        else if (this.current === call) this.fail(new Error('the mount helper was stopped'));
        reject(new MountError(`timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.queue.push(call);
      this.next();
    });
  }

  private next(): void {
    if (this.current || this.dead) return;
    this.current = this.queue.shift();
    if (this.current) this.child.stdin!.write(`${this.current.line}\n`);
  }

  private read(data: string): void {
    this.buffered += data;
    for (let end = this.buffered.indexOf('\n'); end >= 0; end = this.buffered.indexOf('\n')) {
      const answer = this.buffered.slice(0, end);
      this.buffered = this.buffered.slice(end + 1);
      const call = this.current;
      this.current = undefined;
      if (!call) continue;
      clearTimeout(call.timer);
      if (answer === 'ok') call.resolve();
      else {
        const m = /^err (\d+) (.*)$/.exec(answer);
        const errno = m ? Number(m[1]) : 0;
        call.reject(new MountError(m ? m[2] : `unexpected answer "${answer}"`, ERRNO_NAMES[errno]));
      }
      this.next();
    }
  }

  private fail(err: Error): void {
    if (!this.dead && this.child.pid) killGroup(this.child.pid);
    this.dead = true;
    for (const call of [...(this.current ? [this.current] : []), ...this.queue.splice(0)]) {
      clearTimeout(call.timer);
      call.reject(err);
    }
    this.current = undefined;
  }
}

let helper: MountProcess | undefined;
let helperBroken = CALL_NUMBERS[process.arch] === undefined;

/** Tests: whether mount(8) and umount(8) do the work instead of the helper. */
export function mountWithCommands(on: boolean): void {
  helperBroken = on || CALL_NUMBERS[process.arch] === undefined;
}

/** Runs one request through the helper; false when there is none (Perl missing: mount(8) then). */
async function throughHelper(line: string): Promise<boolean> {
  if (helperBroken) return false;
  if (!helper || helper.dead) helper = new MountProcess(CALL_NUMBERS[process.arch]!);
  try {
    await helper.call(line, TIMEOUT_MS);
    return true;
  } catch (err) {
    if (err instanceof MountError) throw err;
    // The helper itself broke: no Perl (ENOENT) means mount(8) from now on; anything else, once.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') helperBroken = true;
    return false;
  }
}

function encode(field: string): string {
  return field.replace(/[%\s]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function mountLine(source: string, target: string, fstype: string, flags: (MountFlag | 'bind' | 'remount')[], data: string): string {
  const bits = flags.reduce((n, f) => n | FLAG_BITS[f], 0);
  return ['mount', source, target, fstype, String(bits), data].map(encode).join(' ');
}

async function mountCommand(args: string[]): Promise<void> {
  const r = await runCommand('mount', args, { timeoutMs: TIMEOUT_MS });
  if (r.code !== 0) throw new MountError(r.stderr.trim() || `mount exited with ${r.code ?? r.signal}`);
}

/** mount(2) of a filesystem (not a bind). Rejects with a MountError carrying the kernel's message. */
export async function mount(req: MountRequest): Promise<void> {
  const flags = req.flags ?? [];
  if (await throughHelper(mountLine(req.source, req.target, req.fstype, flags, req.data ?? ''))) return;
  const options = [...flags, ...(req.data ? [req.data] : [])];
  await mountCommand(['-t', req.fstype, ...(options.length > 0 ? ['-o', options.join(',')] : []), req.source, req.target]);
}

/**
 * A read-only bind mount: a bind, then its remount read-only (the kernel ignores MS_RDONLY on the bind
 * itself). `between` runs between the two steps, where the bind is still writable.
 */
export async function bindMountReadOnly(source: string, target: string, between?: () => void): Promise<void> {
  if (!(await throughHelper(mountLine(source, target, '', ['bind'], '')))) return mountCommand(['--bind', '-o', 'ro', source, target]);
  between?.();
  if (!(await throughHelper(mountLine('', target, '', ['bind', 'remount', 'ro'], '')))) await mountCommand(['-o', 'remount,bind,ro', target]);
}

/** umount2(2); `detach` is MNT_DETACH (umount -l). */
export async function unmount(target: string, options: { detach?: boolean } = {}): Promise<void> {
  const line = ['umount', target, String(options.detach ? MNT_DETACH : 0)].map(encode).join(' ');
  if (await throughHelper(line)) return;
  const r = await runCommand('umount', [...(options.detach ? ['-l'] : []), target], { timeoutMs: TIMEOUT_MS });
  if (r.code !== 0) throw new MountError(r.stderr.trim() || `umount exited with ${r.code ?? r.signal}`);
}

/** Unmounts `target`; one still in use (a process has its cwd there) is detached, and the kernel finishes when it is free. */
export function unmountOrDetach(target: string): Promise<void> {
  return unmount(target).catch(() => unmount(target, { detach: true }).catch(() => {}));
}
