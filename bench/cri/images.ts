// The images the benchmark uses, built from the host's static busybox and pushed to a private
// docker-registry on loopback (the test-side builders, so bench and tests share one image recipe).
import { buildImage, buildTar, busyboxBaseEntries, Pusher, type BuiltImage } from '../../test/support/image-builder.ts';
import { startRegistry, type RunningRegistry } from '../../test/support/registry.ts';

/** Entrypoint of the pause-like sandbox image containerd starts per pod; its argv also identifies it in /proc. */
export const PAUSE_ARGV = ['/bin/sleep', '2147483646'];

export interface BenchImages {
  registry: RunningRegistry;
  /** Containers run this one (kept for the whole run). */
  workload: string;
  /** containerd's sandbox_image. */
  pause: string;
  /** Pulled and removed once per sample; its layer is shared with no other image, so every pull moves the bytes. */
  pull: string;
  /** Compressed bytes of the pull image (manifest + config + layers). */
  pullBytes: number;
}

async function push(pusher: Pusher, repo: string, tag: string, image: BuiltImage): Promise<string> {
  await pusher.image(repo, image, tag);
  return `${repo}:${tag}`;
}

export async function startImageRegistry(): Promise<BenchImages> {
  const registry = await startRegistry();
  try {
    const pusher = new Pusher(registry.url);
    const base = await buildTar(busyboxBaseEntries());
    const workload = buildImage({ format: 'oci', layers: [base], env: ['PATH=/bin'], cmd: ['/bin/sleep', '3600'] });
    const pause = buildImage({ format: 'oci', layers: [base], env: ['PATH=/bin'], entrypoint: PAUSE_ARGV, cmd: [], label: 'pause' });
    // A different layer (an extra file) so nothing kept by the runtime dedupes the pull.
    const pullLayer = await buildTar([...busyboxBaseEntries(), { name: 'etc/bench-pull', content: 'skiff bench pull image\n' }]);
    const pull = buildImage({ format: 'oci', layers: [pullLayer], env: ['PATH=/bin'], cmd: ['/bin/sh'] });
    const host = registry.host;
    return {
      registry,
      workload: `${host}/${await push(pusher, 'bench/busybox', '1', workload)}`,
      pause: `${host}/${await push(pusher, 'bench/pause', '1', pause)}`,
      pull: `${host}/${await push(pusher, 'bench/pull', '1', pull)}`,
      pullBytes: pull.manifest.size + pull.config.size + pull.layers.reduce((s, l) => s + l.size, 0),
    };
  } catch (err) {
    await registry.stop();
    throw err;
  }
}
