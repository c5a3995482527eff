// What a test that runs pods through a real skiffd needs around it: a temp dir, a private CNI
// network, a local registry, and a cleanup list run in reverse once the test ends.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestNetwork, type TestNetwork } from './netns.ts';
import { startRegistry } from './registry.ts';

export interface PodWorld {
  dir: string;
  net: TestNetwork;
  registry: Awaited<ReturnType<typeof startRegistry>>;
  /** Run newest first when the test ends, before the registry, network and dir go; a failure is logged and the rest still run. */
  cleanups: (() => Promise<void>)[];
}

export async function startPodWorld(t: import('node:test').TestContext, prefix: string): Promise<PodWorld> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const net = createTestNetwork(dir);
  const registry = await startRegistry();
  const cleanups: (() => Promise<void>)[] = [];
  t.after(async () => {
    // A failed step is printed, not thrown: the others still run, and a leftover can be traced to its call.
    for (const c of cleanups.reverse()) await c().catch((err: Error) => console.error(`# ${prefix} cleanup: ${err.message}`));
    await registry.stop();
    await net.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, net, registry, cleanups };
}
