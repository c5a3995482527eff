// `runc exec` for ExecSync (the kubelet's exec probes) through one long-lived shell instead of a spawn
// per call. A spawn forks the whole daemon, copying its page tables while the event loop waits (several
// ms at ~100 MB RSS, measured as the largest cost of a node under a kubelet with exec probes); the
// shell is small, forks cheaply and runs each command in a background subshell, so any number of execs
// run at once through it.
//
// Protocol: the daemon writes "<rid> <argc> <cap in 512-byte blocks>" then one argument per line. The shell starts a
// background subshell that makes two FIFOs, DIR/<rid>.o and .e, starts a reader on each that copies the
// first cap to DIR/<rid>.out (.err) and reads and drops the rest, runs the command (stdin
// /dev/null, stdout and stderr to the FIFOs), prints "<token> <rid> pid <pid>", waits for it, then for
// the readers, and prints "<token> <rid> done <status>" ("fail" when the FIFOs cannot be made). So no
// more than the cap of a command's output ever reaches the disk (a probe running `yes` would fill the
// state filesystem otherwise), and a command writing more runs on as it would into a file. Something
// the command left running may hold the FIFOs open after it exits: the readers get a second to finish,
// then are killed, so the call answers when the command ends, as it did with plain files. The call
// reads the files, then removes them. Arguments holding a newline cannot be sent: the caller spawns
// those directly.
//
// The same directory holds every exec's runtime files (process file, pid file, log), ExecSync's and the
// streaming server's: only root can write there, so nobody can plant a pid for a teardown to signal.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  constants,
  fchmodSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  closeSync,
  fstatSync,
  lstatSync,
  realpathSync,
  rmSync,
  statSync,
  unlink,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { killGroup } from '../util/kill-group.ts';

const SCRIPT = [
  't=$1',
  'd=$2',
  'while IFS=" " read -r rid n m; do',
  '  set --',
  '  while [ "$n" -gt 0 ]; do IFS= read -r a; set -- "$@" "$a"; n=$((n - 1)); done',
  // Never a redirect to a FIFO that is not there: it would make a plain file and take all the output.
  // The file size limit (512-byte blocks) stops the first cat at the cap, the second drains the rest.
  // Not head -c, which holds what it read until it ends; nor dd, whose count counts reads.
  `  ( mkfifo -m 600 "$d/$rid.o" "$d/$rid.e" || { printf '%s %s fail\\n' "$t" "$rid"; exit; }`,
  `    { ulimit -f "$m"; trap '' XFSZ; cat >"$d/$rid.out"; cat >/dev/null; } <"$d/$rid.o" 2>/dev/null & r1=$!`,
  `    { ulimit -f "$m"; trap '' XFSZ; cat >"$d/$rid.err"; cat >/dev/null; } <"$d/$rid.e" 2>/dev/null & r2=$!`,
  '    "$@" </dev/null >"$d/$rid.o" 2>"$d/$rid.e" & p=$!',
  `    printf '%s %s pid %s\\n' "$t" "$rid" "$p"`,
  '    wait "$p"; rc=$?',
  '    { sleep 1; kill "$r1" "$r2"; } 2>/dev/null & w=$!',
  '    wait "$r1" "$r2"; kill "$w" 2>/dev/null',
  `    printf '%s %s done %s\\n' "$t" "$rid" "$rc" ) &`,
  'done',
].join('\n');

export interface HelperExecResult {
  /** The exit status as a shell reports it: the code, or 128 + signal number. */
  status: number;
  stdout: Buffer;
  stderr: Buffer;
}

interface Job {
  onPid: (pid: number) => void;
  resolve: (r: HelperExecResult) => void;
  reject: (err: Error) => void;
  maxOutput: number;
}

export class ExecHelper {
  private child: ChildProcess | undefined;
  private token = '';
  private pending = '';
  private readonly jobs = new Map<string, Job>();
  private seq = 0;

  constructor(private readonly dir: string) {}

  /**
   * A fresh path in the helper's directory (e.g. for a pid file); the directory exists once this
   * returns. Throws, naming the directory, when it is not this user's alone.
   */
  file(suffix: string): string {
    this.makeDir();
    return join(this.dir, `${process.pid}-f${++this.seq}.${suffix}`);
  }

  /** Whether a command can go through the helper (no newline in any argument). */
  static canRun(file: string, args: string[]): boolean {
    return !file.includes('\n') && args.every((a) => !a.includes('\n'));
  }

  /**
   * Runs the command; onPid gets its pid (for a timeout to kill). Resolves with its status and output
   * (each cut at maxOutput bytes); rejects only if the helper itself broke.
   */
  run(file: string, args: string[], maxOutput: number, onPid: (pid: number) => void): Promise<HelperExecResult> {
    const child = this.ensure();
    const rid = `${process.pid}-${++this.seq}`;
    return new Promise((resolve, reject) => {
      this.jobs.set(rid, { onPid, resolve, reject, maxOutput });
      const blocks = Math.ceil(Math.max(0, maxOutput) / 512);
      child.stdin!.write(`${rid} ${args.length + 1} ${blocks}\n${[file, ...args].join('\n')}\n`);
    });
  }

  /** Stops the shell; pending calls fail. */
  close(): void {
    const child = this.child;
    this.child = undefined;
    if (child?.pid) killGroup(child.pid);
    this.failAll(new Error('exec helper closed'));
  }

  /**
   * Makes, checks and empties the directory now: at daemon start, so what a crash left (process files
   * hold the container's environment) goes at once rather than at the first exec.
   */
  prepare(): void {
    this.makeDir();
  }

  private dirMade = false;
  private makeDir(): void {
    if (this.dirMade) return;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    checkPrivateDir(this.dir);
    // What a daemon that died mid-exec left (the directory is this runtime root's alone).
    // Synchronously: a new file may take an old name (a reused pid) right after.
    for (const name of readdirSync(this.dir)) rmSync(join(this.dir, name), { recursive: true, force: true });
    this.dirMade = true;
  }

  private ensure(): ChildProcess {
    if (this.child) return this.child;
    this.makeDir();
    this.token = randomBytes(12).toString('hex');
    this.pending = '';
    // Its own process group, so closing it takes every subshell along.
    const child = spawn('/bin/sh', ['-c', SCRIPT, 'skiffd-exec', this.token, this.dir], { stdio: ['pipe', 'pipe', 'ignore'], detached: true });
    this.child = child;
    child.unref();
    for (const s of [child.stdin, child.stdout] as (NodeJS.ReadableStream & { unref?: () => void })[]) s.unref?.();
    const broken = (why: string) => {
      if (this.child !== child) return;
      this.child = undefined;
      if (child.pid) killGroup(child.pid);
      this.failAll(new Error(`exec helper: ${why}`));
    };
    child.stdin!.on('error', () => broken('its input closed'));
    child.on('error', (err) => broken(err.message));
    child.on('exit', () => broken('the shell exited'));
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      this.pending += d;
      let nl = this.pending.indexOf('\n');
      while (nl >= 0) {
        this.line(this.pending.slice(0, nl));
        this.pending = this.pending.slice(nl + 1);
        nl = this.pending.indexOf('\n');
      }
    });
    return child;
  }

  private line(line: string): void {
    const [token, rid, kind, value] = line.split(' ');
    if (token !== this.token || !rid) return;
    const job = this.jobs.get(rid);
    if (!job) return;
    const n = Number.parseInt(value ?? '', 10);
    if (kind === 'pid') {
      if (n > 0) job.onPid(n);
      return;
    }
    if (kind !== 'done' && kind !== 'fail') return;
    this.jobs.delete(rid);
    const out = join(this.dir, `${rid}.out`);
    const err = join(this.dir, `${rid}.err`);
    removeQuietly(join(this.dir, `${rid}.o`));
    removeQuietly(join(this.dir, `${rid}.e`));
    if (kind === 'fail') {
      job.reject(new Error(`cannot make the output FIFOs in ${this.dir}`));
      return;
    }
    try {
      job.resolve({ status: Number.isFinite(n) ? n : 255, stdout: readCapped(out, job.maxOutput), stderr: readCapped(err, job.maxOutput) });
    } catch (e) {
      job.reject(e as Error);
    } finally {
      removeQuietly(out);
      removeQuietly(err);
    }
  }

  private failAll(err: Error): void {
    const jobs = [...this.jobs.values()];
    this.jobs.clear();
    for (const job of jobs) job.reject(err);
  }
}

/**
 * Refuses a directory for exec files that someone else could write into: a symbolic link or not a
 * directory, owned by another user, or under a directory others can write (and rename it in) without
 * the sticky bit. A directory of ours that group or others can read or enter is made 0700.
 * mkdirSync's mode does nothing to a directory that already exists.
 */
export function checkPrivateDir(dir: string, what = 'exec file directory'): void {
  const euid = process.geteuid?.() ?? 0;
  let fd: number;
  try {
    // O_NOFOLLOW: the checks and the chmod apply to the directory itself, never to a link's target.
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const link = lstatSync(dir, { throwIfNoEntry: false })?.isSymbolicLink();
    const why = link || code === 'ELOOP' ? 'is a symbolic link' : code === 'ENOTDIR' ? 'is not a directory' : `cannot be opened (${code})`;
    throw new Error(`the ${what} ${dir} ${why}: remove it, and skiffd makes it again`);
  }
  try {
    const st = fstatSync(fd);
    if (st.uid !== euid) throw new Error(`the ${what} ${dir} is owned by uid ${st.uid}, not ${euid}: remove it, and skiffd makes it again`);
    if ((st.mode & 0o077) !== 0) fchmodSync(fd, 0o700);
  } finally {
    closeSync(fd);
  }
  for (let parent = realpathSync(dirname(dir)); ; parent = dirname(parent)) {
    const st = statSync(parent);
    const sticky = (st.mode & 0o1000) !== 0;
    if (st.uid !== 0 && st.uid !== euid) throw new Error(`the ${what} ${dir} is under ${parent}, owned by uid ${st.uid}: choose a directory elsewhere`);
    if (!sticky && ((st.mode & 0o002) !== 0 || ((st.mode & 0o020) !== 0 && st.gid !== 0)))
      throw new Error(`the ${what} ${dir} is under ${parent}, which others can write (mode ${(st.mode & 0o7777).toString(8)}): chmod go-w ${parent}`);
    if (parent === '/') break;
  }
}

/**
 * One unlink, off the event loop (on a disk-backed state dir an unlink can wait on the journal), no
 * error if the file is not there (rm's force walks the path with lstat first).
 */
export function removeQuietly(file: string): void {
  unlink(file, () => {});
}

/** The first `max` bytes of a file (a probe's output is a few bytes; the files are on the state dir). */
function readCapped(file: string, max: number): Buffer {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return Buffer.alloc(0);
  }
  try {
    const size = Math.min(fstatSync(fd).size, max);
    const buf = Buffer.allocUnsafe(size);
    let at = 0;
    while (at < size) {
      const n = readSync(fd, buf, at, size - at, at);
      if (n === 0) break;
      at += n;
    }
    return at === size ? buf : buf.subarray(0, at);
  } finally {
    closeSync(fd);
  }
}
