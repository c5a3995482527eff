// CheckpointContainer: the container's processes dumped with CRIU (through `runc checkpoint`, left
// running) and written as one tar archive at the requested location, with the OCI spec and the
// container's record beside the CRIU images. Where CRIU is missing or cannot work on this kernel,
// the call says so, with CRIU's own reason.
import { createWriteStream } from 'node:fs';
import { mkdtemp, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { ContainerState } from '../../../proto/gen/runtime/v1/api.ts';
import { execCommand } from '../util/command.ts';
import { which } from '../util/which.ts';
import { failedPrecondition, internal, invalidArgument } from './errors.ts';
import { viewOf } from './status.ts';
import type { ContainerStore } from './store.ts';

const CRIU_CHECK_MS = 20_000;
let criuVerdict: Promise<string | undefined> | undefined;

/** Why CRIU cannot checkpoint on this node, or undefined when it can. Asked once per daemon. */
export function criuProblem(): Promise<string | undefined> {
  criuVerdict ??= (async () => {
    const criu = which('criu');
    if (!criu) return 'CRIU is not installed on this node (Debian: apt-get install criu)';
    const check = await execCommand(criu, ['check'], { timeoutMs: CRIU_CHECK_MS }).catch((err: Error) => ({
      code: -1,
      stdout: '',
      stderr: err.message,
      timedOut: false,
    }));
    if (check.code === 0) return undefined;
    const reason =
      `${check.stderr}\n${check.stdout}`
        .split('\n')
        .find((l) => /error/i.test(l))
        ?.trim() ?? `criu check exited ${check.code}`;
    return `CRIU cannot checkpoint on this node: \`criu check\` says "${reason}"`;
  })();
  return criuVerdict;
}

export async function checkpoint(store: ContainerStore, id: string, location: string): Promise<void> {
  if (!location) throw invalidArgument('location', 'empty: name the archive to write');
  if (!isAbsolute(location)) throw invalidArgument('location', `"${location}" must be an absolute path`);
  const record = store.find(id);
  const view = await viewOf(store, record);
  if (view.state !== ContainerState.CONTAINER_RUNNING)
    throw failedPrecondition(`container ${record.id} is not running (${ContainerState[view.state]}): only a running container can be checkpointed`);
  const problem = await criuProblem();
  if (problem) throw failedPrecondition(`cannot checkpoint container ${record.id}: ${problem}`);
  const work = await mkdtemp(join(store.paths(record.id).dir, 'checkpoint-'));
  try {
    const images = join(work, 'checkpoint');
    await store
      .runtimeOf(record)
      .checkpoint(record.id, images, join(work, 'work'))
      .catch((err: Error) => {
        throw internal(`checkpointing container ${record.id}: ${err.message}`);
      });
    const spec = await readFile(join(store.paths(record.id).bundle, 'config.json'));
    const partial = join(dirname(location), `.${record.id}.checkpoint-partial`);
    await writeArchive(partial, images, { 'spec.dump': spec, 'config.dump': Buffer.from(JSON.stringify(record)) });
    await rename(partial, location);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** A gzip tar: checkpoint/… (CRIU's images) plus the named files at the top. */
async function writeArchive(file: string, imagesDir: string, extra: Record<string, Buffer>): Promise<void> {
  const pack = tar.pack();
  const written = pipeline(pack, createGzip(), createWriteStream(file, { mode: 0o600 }));
  const add = (name: string, body: Buffer) =>
    new Promise<void>((resolve, reject) => pack.entry({ name, mode: 0o600 }, body, (err) => (err ? reject(err) : resolve())));
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if ((await stat(path)).isFile()) await add(join('checkpoint', relative(imagesDir, path)), await readFile(path));
    }
  };
  await walk(imagesDir);
  for (const [name, body] of Object.entries(extra)) await add(name, body);
  pack.finalize();
  await written;
}
