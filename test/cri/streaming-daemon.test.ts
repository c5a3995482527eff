// Exec, attach and port-forward through a real skiffd over CRI gRPC, with kubectl (SPDY) as the
// client (see test/support/streaming-daemon.ts). SKIFFD_BIN=dist/skiffd.cjs runs it on a build.
import { test } from 'node:test';
import { needs } from '../support/prereq.ts';
import { STREAMING_DAEMON_PREREQS, streamingThroughDaemon } from '../support/streaming-daemon.ts';

test('streaming through skiffd: Exec/Attach/PortForward URLs used by kubectl (SPDY)', { timeout: 120_000 }, async (t) => {
  if (!needs(t, STREAMING_DAEMON_PREREQS)) return;
  await streamingThroughDaemon(t);
});
