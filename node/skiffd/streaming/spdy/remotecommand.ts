// Exec and attach over SPDY: the client opens one stream per purpose, named by the `streamType`
// header (error, stdin, stdout, stderr, resize). The session starts once every stream the request
// implies has arrived; the outcome goes on the error stream, then the connection closes.
import type { AttachStreamRequest, ExecStreamRequest } from '../requests.ts';
import { ResizeDecoder, ResizeFeed, endWritable, errorStreamPayload, runRemoteCommand, type RemoteCommandBackend } from '../remotecommand.ts';
import type { SpdySession, SpdyStream } from './session.ts';

/** How long the client has to open all its streams (the kubelet's default, too). */
export const STREAM_CREATION_TIMEOUT_MS = 30_000;

type StreamType = 'error' | 'stdin' | 'stdout' | 'stderr' | 'resize';

export function expectedStreams(request: ExecStreamRequest | AttachStreamRequest, version: number): Set<StreamType> {
  const want = new Set<StreamType>(['error']);
  if (request.stdin) want.add('stdin');
  if (request.stdout) want.add('stdout');
  if (request.stderr && !request.tty) want.add('stderr');
  if (request.tty && version >= 3) want.add('resize');
  return want;
}

export async function serveSpdyRemoteCommand(
  session: SpdySession,
  version: number,
  request: ExecStreamRequest | AttachStreamRequest,
  backend: RemoteCommandBackend,
): Promise<void> {
  const want = expectedStreams(request, version);
  const streams = new Map<StreamType, SpdyStream>();
  const abort = new AbortController();
  session.on('close', () => abort.abort());

  const ready = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), STREAM_CREATION_TIMEOUT_MS);
    timer.unref();
    session.on('close', () => {
      clearTimeout(timer);
      resolve(false);
    });
    session.on('stream', (stream) => {
      const type = stream.header('streamtype') as StreamType | undefined;
      if (!type || !want.has(type) || streams.has(type)) {
        // A stream the request did not ask for (or a duplicate): refuse it, keep the session.
        stream.destroy();
        return;
      }
      streams.set(type, stream);
      if (type === 'stdout' || type === 'stderr' || type === 'error') stream.resume(); // the client only FINs these
      if (streams.size === want.size) {
        clearTimeout(timer);
        resolve(true);
      }
    });
  });

  if (!(await ready)) {
    for (const s of streams.values()) s.destroy();
    session.close();
    return;
  }

  const resizeStream = streams.get('resize');
  const resize = new ResizeFeed(resizeStream !== undefined);
  if (resizeStream) {
    const decoder = new ResizeDecoder((size) => resize.push(size));
    resizeStream.on('data', (chunk: Buffer) => decoder.push(chunk));
    resizeStream.on('error', () => {});
  }
  for (const s of streams.values()) s.on('error', () => {});

  const outcome = await runRemoteCommand(backend, request, {
    stdin: streams.get('stdin'),
    stdout: streams.get('stdout'),
    stderr: streams.get('stderr'),
    resize,
    signal: abort.signal,
  });

  await Promise.all([endWritable(streams.get('stdout')), endWritable(streams.get('stderr'))]);
  const errorStream = streams.get('error')!;
  const payload = errorStreamPayload(version, outcome);
  if (payload !== undefined && !errorStream.destroyed) errorStream.write(payload);
  await endWritable(errorStream);
  // Our half of the client-to-server streams was never used: finish it.
  streams.get('stdin')?.end();
  resizeStream?.end();
  session.close();
}
