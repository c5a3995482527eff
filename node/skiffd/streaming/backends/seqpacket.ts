// A SOCK_SEQPACKET client for conmon's attach socket. Node core cannot open one; the native part of
// the npm package node-unix-socket (a prebuilt N-API add-on) can. We load only that add-on and
// drive it with this small wrapper, so the JavaScript bundles with the daemon and the add-on file
// is found wherever the build put it:
//   1. $SKIFFD_SEQPACKET_ADDON (an explicit path);
//   2. next to the running script or executable (dist/skiffd.cjs, dist/skiffd);
//   3. a single-executable asset, extracted to a private temp file;
//   4. node_modules (running from source).
import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** node-unix-socket publishes one prebuilt add-on per platform; this host's (glibc Linux). */
export const ADDON_PLATFORM = `linux-${process.arch}-gnu`;
export const ADDON_FILE = `node-unix-socket.${ADDON_PLATFORM}.node`;
export const ADDON_PACKAGE = `node-unix-socket-${ADDON_PLATFORM}`;

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
let loadError: Error | undefined;

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

function fromSeaAsset(): NativeBinding | undefined {
  let sea: { isSea(): boolean; getAsset(key: string): ArrayBuffer } | undefined;
  try {
    sea = createRequire(join(process.cwd(), 'x'))('node:sea') as typeof sea;
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
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-addon-'));
  const file = join(dir, ADDON_FILE);
  try {
    writeFileSync(file, Buffer.from(asset), { mode: 0o500 });
    return loadFile(file);
  } finally {
    // Once loaded, the mapping outlives the file: leave nothing behind in the temp dir.
    rmSync(dir, { recursive: true, force: true });
  }
}

function fromNodeModules(): NativeBinding | undefined {
  const bases = [process.argv[1], join(process.cwd(), 'x')].filter(Boolean) as string[];
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

/** The native binding, loaded once; throws a message saying where it was looked for. */
function nativeBinding(): NativeBinding {
  if (binding) return binding;
  if (loadError) throw loadError;
  const tried: string[] = [];
  for (const path of candidates()) {
    tried.push(path);
    if (existsSync(path)) return (binding = loadFile(path));
  }
  binding = fromSeaAsset() ?? fromNodeModules();
  if (binding) return binding;
  loadError = new Error(
    `cannot load the SOCK_SEQPACKET add-on ${ADDON_FILE} (looked at ${tried.join(', ')}, the executable's assets and node_modules/${ADDON_PACKAGE}); attach needs it`,
  );
  throw loadError;
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
    this.on('_data', (buf: Buffer) => this.emit('data', buf));
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

  write(buf: Buffer): void {
    if (this.destroyed) return;
    this.wrap.write(buf, 0, buf.length);
  }

  /** Half-close once queued packets are sent (the peer reads EOF). */
  end(): void {
    if (!this.destroyed) this.wrap.shutdownWhenFlushed();
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.wrap.close();
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
