// Exec and attach over WebSocket: channels 0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize. The
// outcome goes on the error channel (a metav1.Status from v4 on), then the socket closes normally.
import { PassThrough } from 'node:stream';
import type { AttachStreamRequest, ExecStreamRequest } from '../requests.ts';
import {
  REMOTECOMMAND_PROTOCOLS,
  ResizeDecoder,
  ResizeFeed,
  endWritable,
  errorStreamPayload,
  runRemoteCommand,
  type RemoteCommandBackend,
} from '../remotecommand.ts';
import type { ChannelSocket } from './channels.ts';

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;

/** Subprotocols for exec/attach, in the order we prefer them; `base64.` ones use text frames. */
export const WS_REMOTECOMMAND_PROTOCOLS: readonly string[] = [
  ...REMOTECOMMAND_PROTOCOLS,
  'v4.base64.channel.k8s.io',
  'v3.base64.channel.k8s.io',
  'v2.base64.channel.k8s.io',
  'base64.channel.k8s.io',
];

export async function serveWebSocketRemoteCommand(
  channels: ChannelSocket,
  version: number,
  request: ExecStreamRequest | AttachStreamRequest,
  backend: RemoteCommandBackend,
): Promise<void> {
  const abort = new AbortController();
  channels.ws.on('close', () => abort.abort());

  let stdin: PassThrough | undefined;
  if (request.stdin) {
    const input = new PassThrough();
    stdin = input;
    // Back-pressure: while the command does not read its stdin, stop reading the WebSocket (the
    // client's TCP window closes) instead of buffering what it sends.
    let waiting = false;
    channels.onData(STDIN, (data) => {
      if (input.writableEnded || input.write(data) || waiting) return;
      waiting = true;
      channels.ws.pause();
      input.once('drain', () => {
        waiting = false;
        channels.ws.resume();
      });
    });
    channels.onClose(STDIN, () => input.end());
    channels.ws.on('close', () => input.end());
  }
  const resize = new ResizeFeed(request.tty && version >= 3);
  if (request.tty && version >= 3) {
    const decoder = new ResizeDecoder((size) => resize.push(size));
    channels.onData(RESIZE, (data) => decoder.push(data));
  }
  const stdout = request.stdout ? channels.writer(STDOUT) : undefined;
  const stderr = request.stderr && !request.tty ? channels.writer(STDERR) : undefined;

  const outcome = await runRemoteCommand(backend, request, { stdin, stdout, stderr, resize, signal: abort.signal });
  await Promise.all([endWritable(stdout), endWritable(stderr)]);
  const payload = errorStreamPayload(version, outcome);
  if (payload !== undefined && channels.open) await new Promise<void>((resolve) => channels.send(ERROR, payload, () => resolve()));
  channels.close(1000);
}
