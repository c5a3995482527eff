// The remotecommand protocol (exec and attach) independent of its carrier (SPDY streams or
// WebSocket channels): protocol versions, how the outcome is reported on the error stream, how
// resize messages are read, and the run loop that ties a backend to the client's streams.
import type { Readable, Writable } from 'node:stream';
import type { AttachStreamRequest, ExecStreamRequest } from './requests.ts';

/** Channel protocol versions, newest first (the order a server prefers when asked for several). */
export const REMOTECOMMAND_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'] as const;

/** 1..5: what each version adds: v2 a separate error stream semantics, v3 resize, v4 JSON status, v5 stdin close. */
export function protocolVersion(protocol: string): number {
  const m = /^v(\d)\./.exec(protocol);
  return m ? Number(m[1]) : 1;
}

export interface TerminalSize {
  width: number;
  height: number;
}

/** Resize requests from the client; the last size is kept for a listener that subscribes late. */
export class ResizeFeed {
  private listener: ((size: TerminalSize) => void) | undefined;
  last: TerminalSize | undefined;

  /** `enabled`: the client has a way to send sizes at all (a resize stream or channel). */
  constructor(readonly enabled = true) {}

  push(size: TerminalSize): void {
    this.last = size;
    this.listener?.(size);
  }

  /** One listener (the backend); it gets the latest size at once if one arrived already. */
  subscribe(listener: (size: TerminalSize) => void): void {
    this.listener = listener;
    if (this.last) listener(this.last);
  }

  /**
   * Like subscribe, for an asynchronous apply step: sizes are applied one after another, in the
   * order they came. Order matters: kubectl attach sends (w+1, h+1) then (w, h) to force a redraw,
   * and two racing writes would leave the terminal at the wrong size.
   */
  subscribeSerially(apply: (size: TerminalSize) => Promise<void>): void {
    let chain = Promise.resolve();
    this.subscribe((size) => {
      chain = chain.then(() => apply(size)).catch(() => undefined);
    });
  }
}

/**
 * Decodes the resize stream: a sequence of JSON objects `{"Width":W,"Height":H}` with no
 * delimiter guaranteed between them, possibly split across chunks.
 */
export class ResizeDecoder {
  private text = '';

  constructor(private readonly onSize: (size: TerminalSize) => void) {}

  push(chunk: Buffer | string): void {
    this.text += chunk.toString();
    for (;;) {
      const start = this.text.indexOf('{');
      if (start < 0) {
        this.text = '';
        return;
      }
      let depth = 0;
      let end = -1;
      for (let i = start; i < this.text.length; i++) {
        if (this.text[i] === '{') depth++;
        else if (this.text[i] === '}' && --depth === 0) {
          end = i;
          break;
        }
      }
      if (end < 0) {
        this.text = this.text.slice(start);
        if (this.text.length > 4096) this.text = ''; // garbage, not a size
        return;
      }
      const json = this.text.slice(start, end + 1);
      this.text = this.text.slice(end + 1);
      try {
        const v = JSON.parse(json) as { Width?: unknown; Height?: unknown };
        const width = Number(v.Width);
        const height = Number(v.Height);
        if (Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0 && width < 65536 && height < 65536) this.onSize({ width, height });
      } catch {
        /* not JSON: ignore, as the kubelet does */
      }
    }
  }
}

/** The client's side of a remotecommand session, as the carrier presents it to the backend. */
export interface RemoteCommandIO {
  /** Data the client types; ends when the client closes its stdin. */
  stdin?: Readable;
  stdout?: Writable;
  stderr?: Writable;
  resize: ResizeFeed;
  /** Aborted when the client goes away before the command finished. */
  signal: AbortSignal;
}

/** How a session ended: an exit code (exec), plain success (attach) or an error. */
export type RemoteCommandOutcome = { exitCode: number } | { error: string };

export interface RemoteCommandBackend {
  exec(request: ExecStreamRequest, io: RemoteCommandIO): Promise<number>;
  attach(request: AttachStreamRequest, io: RemoteCommandIO): Promise<void>;
}

/** Runs exec or attach and reports the outcome instead of throwing. */
export async function runRemoteCommand(
  backend: RemoteCommandBackend,
  request: ExecStreamRequest | AttachStreamRequest,
  io: RemoteCommandIO,
): Promise<RemoteCommandOutcome> {
  try {
    if (request.kind === 'exec') return { exitCode: await backend.exec(request, io) };
    await backend.attach(request, io);
    return { exitCode: 0 };
  } catch (err) {
    return { error: (err as Error).message || String(err) };
  }
}

/**
 * What goes on the error stream for this outcome, or undefined for nothing. v4 and v5 carry a
 * metav1.Status; earlier versions carry the error text alone (and nothing on success).
 */
export function errorStreamPayload(version: number, outcome: RemoteCommandOutcome): string | undefined {
  if (version >= 4) {
    if ('exitCode' in outcome && outcome.exitCode === 0) return JSON.stringify({ metadata: {}, status: 'Success' });
    if ('exitCode' in outcome) {
      return JSON.stringify({
        metadata: {},
        status: 'Failure',
        message: `command terminated with non-zero exit code: exit status ${outcome.exitCode}`,
        reason: 'NonZeroExitCode',
        details: { causes: [{ reason: 'ExitCode', message: String(outcome.exitCode) }] },
      });
    }
    return JSON.stringify({
      metadata: {},
      status: 'Failure',
      message: outcome.error,
      reason: 'InternalError',
      code: 500,
      details: { causes: [{ message: outcome.error }] },
    });
  }
  if ('exitCode' in outcome) return outcome.exitCode === 0 ? undefined : `command terminated with non-zero exit code: exit status ${outcome.exitCode}`;
  return outcome.error;
}

/** Ends a writable and resolves once everything written to it has been handed on. */
export function endWritable(w: Writable | undefined): Promise<void> {
  if (!w || w.writableFinished || w.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    w.once('finish', resolve);
    w.once('close', resolve);
    w.once('error', () => resolve());
    w.end();
  });
}
