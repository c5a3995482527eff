// The images the image tests pull, built here from busybox-static and pushed to a local registry:
// Docker schema2 and OCI manifests, one manifest under two tags, a multi-platform OCI index and a
// Docker manifest list (host platform + another), `library/busybox` for docker.io normalisation
// through a mirror, and an image with a layer of its own for the corruption test.
import { buildImage, buildIndex, buildTar, busyboxBaseEntries, overlayTestEntries, Pusher, type Blob, type BuiltImage } from './image-builder.ts';
import { startRegistry, type RunningRegistry } from './registry.ts';

const HOST_ARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64' };
export const hostArch = HOST_ARCH[process.arch] ?? process.arch;
export const otherArch = hostArch === 'arm64' ? 'amd64' : 'arm64';

export interface ImageFixtures {
  registry: RunningRegistry;
  /** test/app:docker — Docker schema2, two layers, User "1000" */
  docker: BuiltImage;
  /** test/app:oci and test/app:v2 — OCI, two layers, User "app:app" */
  oci: BuiltImage;
  /** test/multi:latest (OCI index) and test/multi-docker:latest (Docker list): host + other arch */
  multiHost: BuiltImage;
  multiOther: BuiltImage;
  ociIndex: Blob;
  dockerList: Blob;
  /** library/busybox:latest, reached as `busybox` through a docker.io mirror (and pause:3.9 for registry.k8s.io) */
  busybox: BuiltImage;
  /** test/fragile:latest: its top layer is unique, for corrupting in the registry's storage */
  fragile: BuiltImage;
  /** test/private:v1 for the auth tests */
  priv: BuiltImage;
}

export async function startImageFixtures(storageDir?: string): Promise<ImageFixtures> {
  const registry = await startRegistry({ storageDir });
  try {
    const base = await buildTar(busyboxBaseEntries());
    const top = await buildTar(overlayTestEntries('two-layer image'));
    const docker = buildImage({
      format: 'docker',
      layers: [base, top],
      user: '1000',
      cmd: ['/bin/sh', '-c', 'echo hi'],
      env: ['PATH=/bin', 'GREETING=docker'],
      workingDir: '/home/app',
      stopSignal: 'SIGINT',
    });
    const oci = buildImage({ format: 'oci', layers: [base, top], user: 'app:app', entrypoint: ['/bin/sleep'], cmd: ['3600'], label: 'oci' });
    const multiHost = buildImage({ format: 'oci', layers: [base], architecture: hostArch, user: '1000:1000', label: 'multi-host' });
    const multiOther = buildImage({
      format: 'oci',
      layers: [base],
      architecture: otherArch,
      variant: otherArch === 'arm64' ? 'v8' : undefined,
      label: 'multi-other',
    });
    const ociIndex = buildIndex('oci', [multiOther, multiHost]);
    const dockerHost = buildImage({ format: 'docker', layers: [base], architecture: hostArch, user: '1000:1000', label: 'multi-docker-host' });
    const dockerOther = buildImage({ format: 'docker', layers: [base], architecture: otherArch, label: 'multi-other' });
    const dockerList = buildIndex('docker', [dockerOther, dockerHost]);
    const busybox = buildImage({ format: 'docker', layers: [base], label: 'library-busybox' });
    const fragile = buildImage({ format: 'oci', layers: [base, await buildTar(overlayTestEntries('fragile'))], label: 'fragile' });
    const priv = buildImage({ format: 'oci', layers: [base], label: 'private' });

    const p = new Pusher(registry.url);
    await p.image('test/app', docker, 'docker');
    await p.image('test/app', oci, 'oci');
    await p.manifest('test/app', 'v2', oci.manifest);
    await p.index('test/multi', ociIndex, [multiOther, multiHost], 'latest');
    await p.index('test/multi-docker', dockerList, [dockerOther, dockerHost], 'latest');
    await p.image('library/busybox', busybox, 'latest');
    await p.image('pause', busybox, '3.9');
    await p.image('test/fragile', fragile, 'latest');
    await p.image('test/private', priv, 'v1');
    return { registry, docker, oci, multiHost, multiOther, ociIndex, dockerList, busybox, fragile, priv };
  } catch (err) {
    await registry.stop();
    throw err;
  }
}

/** Where docker-registry's filesystem driver keeps a blob's bytes. */
export function registryBlobPath(storageDir: string, digest: string): string {
  const hex = digest.replace(/^sha256:/, '');
  return `${storageDir}/docker/registry/v2/blobs/sha256/${hex.slice(0, 2)}/${hex}/data`;
}
