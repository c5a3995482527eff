// One bench server in its own process: `tsx bench/graphql/server-process.ts NAME` prints
// `READY <port>` once listening and exits when told (SIGTERM/SIGINT) or when its parent goes away.
// Over the IPC channel it answers `publish-times` with the chat servers' recorded publishes, and
// `cpu-usage` with its own CPU time in microseconds (getrusage: every thread, exited ones too), which
// /proc/PID/stat would round to 10 ms ticks, and `live-bytes` with its heap and external memory after a
// full collection (run with --expose-gc).
import { benchServer } from './servers.ts';
import { chatServers } from './chat-servers.ts';
import { takePublishTimes } from './publish-clock.ts';

const name = process.argv[2];
if (!name) {
  console.error('usage: server-process.ts NAME');
  process.exit(2);
}

/** Heap used plus external memory after full collections (what survives is what is held). */
function liveBytes(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) return Number.NaN;
  // Twice: objects with finalizers (sockets' native handles) are freed by the second pass.
  gc();
  gc();
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}

try {
  const running = await (chatServers.find((s) => s.name === name) ?? benchServer(name)).start();
  const stop = () => {
    running.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // The runner holds our stdin open; when it dies, stdin ends and so do we.
  process.stdin.on('end', stop);
  process.stdin.resume();
  process.on('message', (message) => {
    if (message === 'publish-times') process.send?.({ publishTimes: takePublishTimes() });
    if (message === 'cpu-usage') process.send?.({ cpuUsage: process.cpuUsage() });
    if (message === 'live-bytes') process.send?.({ liveBytes: liveBytes() });
  });
  // The IPC channel must not keep us alive on its own.
  process.channel?.unref();
  process.stdout.write(`READY ${running.port}\n`);
} catch (error) {
  console.error(`bench server ${name} failed to start:`, error);
  process.exit(1);
}
