// A SOCK_SEQPACKET client for conmon's attach socket. Node core cannot open one; the native part of
// the npm package node-unix-socket (a prebuilt N-API add-on) can. We load only that add-on and
// drive it with this small wrapper, so the JavaScript bundles with the daemon and the add-on file
// is found wherever the build put it:
//   1. $SKIFFD_SEQPACKET_ADDON (an explicit path);
//   2. next to the running script or executable (dist/skiffd.cjs, dist/skiffd);
//   3. a single-executable asset, extracted into a private directory under skiffd's state dir
//      (never the shared temp dir, where a root container with a hostPath /tmp could swap it);
//   4. node_modules beside this module or the script (running from source; never the cwd).
// npm ci installs the x64 add-on only. Without one, attach is off (the Attach RPC answers
// FAILED_PRECONDITION saying how to supply it) and everything else works.
import { EventEmitter } from 'node:events';
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, realpathSync, rmSync, statSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { checkPrivateDir } from '../../oci/exec-helper.ts';

/** The add-on of this host's platform (glibc Linux), as node-unix-socket names it. */
export const ADDON_PLATFORM = `linux-${process.arch}-gnu`;
export const ADDON_FILE = `node-unix-socket.${ADDON_PLATFORM}.node`;
export const ADDON_PACKAGE = `node-unix-socket-${ADDON_PLATFORM}`;
/** package.json installs the x64 add-on only; other hosts get theirs another way (see the message below). */
const PUBLISHED = ADDON_PLATFORM === 'linux-x64-gnu';

interface NativeWrap {
  init(self: object): void;
  startRecv(): void;
  connect(path: string): void;
  write(buf: Buffer, offset: number, length: number, cb?: () => void): void;
  shutdownWhenFlushed(): void;
  close(): void;
}

interface NativeBinding {
  SeqpacketSocketWrap: new (emitter: object, fd?: number) => NativeWrap;
}

let binding: NativeBinding | undefined;
let missing: AddonMissing | undefined;
/** Where a single executable extracts its add-on: set from the daemon's state dir before first use. */
let extractDir: string | undefined;

/** Tells the loader skiffd's state dir; a single executable's add-on is extracted under it. */
export function setSeqpacketStateDir(stateDir: string): void {
  extractDir = join(stateDir, 'addon');
}

/** Why the add-on could not be loaded: `message` for clients, `lookedAt` for the operator's log. */
export interface AddonMissing {
  message: string;
  lookedAt: string[];
}

function candidates(): string[] {
  const out: string[] = [];
  if (process.env.SKIFFD_SEQPACKET_ADDON) out.push(process.env.SKIFFD_SEQPACKET_ADDON);
  if (process.argv[1]) {
    out.push(join(dirname(process.argv[1]), ADDON_FILE));
    // Started through a symlink (e.g. /usr/local/bin/skiffd.cjs): also look beside the real file.
    try {
      out.push(join(dirname(realpathSync(process.argv[1])), ADDON_FILE));
    } catch {
      /* argv[1] is not a file (a single executable's argv) */
    }
  }
  out.push(join(dirname(process.execPath), ADDON_FILE));
  return out;
}

function loadFile(path: string): NativeBinding {
  const mod = { exports: {} as NativeBinding };
  process.dlopen(mod, path);
  return mod.exports;
}

/**
 * Writes the add-on into `dir` (made private: 0700, ours, no symlink, parents not writable by
 * others) under a fresh name, opened exclusively, and loads it through the descriptor written:
 * /proc/self/fd/N is that inode whatever happens to the name. The file is gone afterwards.
 */
export function extractAddon(asset: Buffer, dir: string): NativeBinding {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  checkPrivateDir(dir, 'attach add-on directory');
  const file = join(dir, `${process.pid}-${Date.now()}-${ADDON_FILE}`);
  const fd = openSync(file, 'wx', 0o700);
  try {
    for (let off = 0; off < asset.length; ) off += writeSync(fd, asset, off);
    const written = fstatSync(fd);
    const byName = statSync(file);
    if (byName.dev !== written.dev || byName.ino !== written.ino) throw new Error(`${file} was replaced while it was written`);
    return loadFile(`/proc/self/fd/${fd}`);
  } finally {
    closeSync(fd);
    // Once loaded, the mapping outlives the file: leave nothing behind.
    rmSync(file, { force: true });
  }
}

function fromSeaAsset(failures: string[]): NativeBinding | undefined {
  let sea: { isSea(): boolean; getAsset(key: string): ArrayBuffer } | undefined;
  try {
    sea = createRequire(process.execPath)('node:sea') as typeof sea;
  } catch {
    return undefined; // Node without single-executable support
  }
  if (!sea?.isSea()) return undefined;
  let asset: ArrayBuffer;
  try {
    asset = sea.getAsset(ADDON_FILE);
  } catch {
    return undefined;
  }
  if (!extractDir) {
    failures.push(`the executable's asset ${ADDON_FILE}: no state directory to extract it into`);
    return undefined;
  }
  try {
    return extractAddon(Buffer.from(asset), extractDir);
  } catch (err) {
    failures.push(`the executable's asset ${ADDON_FILE}: ${(err as Error).message}`);
    return undefined;
  }
}

function fromNodeModules(): NativeBinding | undefined {
  // Resolved from this module and the script only: the working directory may be anybody's.
  const bases = [process.argv[1]].filter(Boolean) as string[];
  if (typeof __filename === 'string') bases.unshift(__filename);
  for (const base of bases) {
    try {
      return loadFile(createRequire(base).resolve(`${ADDON_PACKAGE}/${ADDON_FILE}`));
    } catch {
      /* try the next */
    }
  }
  return undefined;
}

/** The native binding, loaded once (a failure too: the daemon does not look again until restarted). */
function nativeBinding(): NativeBinding {
  if (binding) return binding;
  if (missing) throw new Error(missing.message);
  const lookedAt: string[] = [];
  const failures: string[] = [];
  for (const path of new Set(candidates())) {
    lookedAt.push(path);
    if (!existsSync(path)) continue;
    try {
      return (binding = loadFile(path));
    } catch (err) {
      // A file of another architecture or a broken build: say so, and keep looking.
      failures.push(`${path}: ${(err as Error).message}`);
    }
  }
  binding = fromSeaAsset(failures) ?? fromNodeModules();
  if (binding) return binding;
  lookedAt.push("the executable's assets", `node_modules/${ADDON_PACKAGE}`);
  const source = PUBLISHED
    ? `the npm package ${ADDON_PACKAGE}, or built from node-unix-socket's source with napi-rs`
    : `${ADDON_PACKAGE}@0.2.7 where your npm registry has it, else built from node-unix-socket's source with napi-rs`;
  missing = {
    message:
      `skiffd cannot load ${ADDON_FILE}, the SOCK_SEQPACKET add-on that attach needs for conmon's attach socket` +
      (failures.length ? ` (${failures.join('; ')})` : '') +
      `. Get the add-on (${source}), then set SKIFFD_SEQPACKET_ADDON to the .node file or put it beside the skiffd executable (or skiffd.cjs) as ${ADDON_FILE}, and restart skiffd`,
    lookedAt,
  };
  throw new Error(missing.message);
}

/** Why attach cannot work in this process, or undefined when the add-on loads. */
export function seqpacketMissing(): AddonMissing | undefined {
  try {
    nativeBinding();
    return undefined;
  } catch (err) {
    return missing ?? { message: (err as Error).message, lookedAt: [] };
  }
}

/** A connected-mode SOCK_SEQPACKET socket: 'data' events carry whole packets. */
export class SeqpacketSocket extends EventEmitter {
  private readonly wrap: NativeWrap;
  private destroyed = false;
  private ended = false;
  private shutDown = false;
  private connectCb: (() => void) | undefined;

  constructor() {
    super();
    const { SeqpacketSocketWrap } = nativeBinding();
    // The add-on calls back through this emitter's emit with '_data', '_connect', '_error', 'end', '_shutdown'.
    this.emit = this.emit.bind(this);
    this.wrap = new SeqpacketSocketWrap(this);
    this.wrap.init(this.wrap);
    this.on('_data', (buf: Buffer) => {
      if (!this.destroyed) this.emit('data', buf);
    });
    this.on('_connect', () => {
      this.wrap.startRecv();
      this.emit('connect');
      this.connectCb?.();
      this.connectCb = undefined;
    });
    this.on('_error', (err: Error) =>
      process.nextTick(() => {
        this.emit('error', err);
        this.destroy();
      }),
    );
    this.on('end', () => {
      this.ended = true;
      this.closeIfDone();
    });
    this.on('_shutdown', () => {
      this.shutDown = true;
      this.closeIfDone();
    });
  }

  connect(path: string, cb?: () => void): void {
    if (this.destroyed) throw new Error('socket destroyed');
    this.connectCb = cb;
    this.wrap.connect(path);
  }

  /** Queues one packet; `cb` runs once the kernel took it (never, if the socket is destroyed first). */
  write(buf: Buffer, cb?: () => void): void {
    if (this.destroyed) return;
    this.wrap.write(buf, 0, buf.length, cb);
  }

  /** Half-close once queued packets are sent (the peer reads EOF). */
  end(): void {
    if (!this.destroyed) this.wrap.shutdownWhenFlushed();
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    // Never close inside the add-on's read loop (a 'data' handler that ends the session): the loop
    // goes on reading and emitting, and an emit after close panics the add-on, aborting skiffd.
    setImmediate(() => this.wrap.close());
    this.emit('close');
  }

  private closeIfDone(): void {
    if (this.ended && this.shutDown) this.destroy();
  }
}

/** Kept async so callers need not care whether loading touched the disk. */
export async function loadSeqpacket(): Promise<{ SeqpacketSocket: typeof SeqpacketSocket }> {
  nativeBinding();
  return { SeqpacketSocket };
}
