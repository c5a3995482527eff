// What one CRI call costs through skiffd's gRPC stack alone: a nice-grpc server (grpc-js, HTTP/2 on a unix
// socket) answering Version with no work, called by a nice-grpc client in the same process, one call at a
// time. Batches in a row show how the cost falls as V8 compiles the path; on an emulated node the first
// calls cost several times the later ones.
//   npx tsx bench/cri/grpc-roundtrip.ts [--batches 20,20,200,200]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createChannel, createClient, createServer } from 'nice-grpc';
import { RuntimeServiceDefinition } from '../../proto/gen/runtime/v1/api.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  console.log('usage: npx tsx bench/cri/grpc-roundtrip.ts [--batches N,N,...]   (default 20,20,200,200)');
  process.exit(0);
}
const at = argv.indexOf('--batches');
const batches =
  at === -1
    ? [20, 20, 200, 200]
    : String(argv[at + 1])
        .split(',')
        .map(Number);
if (batches.some((n) => !Number.isInteger(n) || n < 1)) {
  console.error(`--batches needs positive integers separated by commas (got ${argv[at + 1]})`);
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), 'skiff-grpc-'));
const socket = join(dir, 'grpc.sock');
const server = createServer();
// The service with its one method: nice-grpc wants every listed method implemented.
const VersionOnly = { ...RuntimeServiceDefinition, methods: { version: RuntimeServiceDefinition.methods.version } } as const;
server.add(VersionOnly, {
  version: async () => ({ version: '0.1.0', runtimeName: 'bench', runtimeVersion: '0', runtimeApiVersion: 'v1' }),
});
await server.listen(`unix://${socket}`);
const channel = createChannel(`unix://${socket}`);
const client = createClient(VersionOnly, channel);
try {
  let done = 0;
  for (const n of batches) {
    const started = performance.now();
    const cpu = process.cpuUsage();
    for (let i = 0; i < n; i++) await client.version({}, { signal: AbortSignal.timeout(30_000) });
    const used = process.cpuUsage(cpu);
    const wall = (performance.now() - started) / n;
    console.log(
      `calls ${done + 1}-${done + n}: ${wall.toFixed(2)} ms per call, ${((used.user + used.system) / n / 1000).toFixed(2)} ms CPU per call (client and server)`,
    );
    done += n;
  }
} finally {
  channel.close();
  await server.shutdown();
  rmSync(dir, { recursive: true, force: true });
}
