// Opens the container subsystem for the daemon (ctx.containers): the OCI runtime from [runtime],
// records under --root, exit files and attach sockets under --state, pods from ctx.pods and images
// from ctx.images. Recovery (reconciling records with runc and conmon's exit files) finishes here,
// before the socket listens.
import { join } from 'node:path';
import type { DaemonContext } from '../context.ts';
import { makeOciRuntime } from '../oci/index.ts';
import { ContainerManager } from './manager.ts';
import type { ImageResolver, PodLookup, ResolvedImage } from './types.ts';

export { ContainerManager } from './manager.ts';
export type { ContainerView, ContainerEvent, ResolvedImage, ImageResolver, PodLookup } from './types.ts';

/** The image subsystem as containers use it (node/skiffd/images/image-manager.ts). */
interface ImageManagerLike {
  resolve(spec: string): { id: string; repoDigests: string[] } | undefined;
  layerDirs(spec: string): string[];
  runConfig(spec: string): { Entrypoint?: string[]; Cmd?: string[]; Env?: string[]; WorkingDir?: string; User?: string; StopSignal?: string };
  retainLayers?(dirs: string[]): () => void;
}

export function imageResolverFrom(images: unknown): ImageResolver {
  const m = images as Partial<ImageManagerLike> | undefined;
  if (!m || typeof m.resolve !== 'function' || typeof m.layerDirs !== 'function' || typeof m.runConfig !== 'function') {
    return { resolve: () => undefined };
  }
  const manager = m as ImageManagerLike;
  return {
    resolve(spec: string): ResolvedImage | undefined {
      const record = manager.resolve(spec);
      if (!record) return undefined;
      const c = manager.runConfig(record.id);
      return {
        id: record.id,
        ref: record.repoDigests[0] ?? record.id,
        layers: manager.layerDirs(record.id),
        config: { entrypoint: c.Entrypoint ?? undefined, cmd: c.Cmd ?? undefined, env: c.Env ?? undefined, workingDir: c.WorkingDir, user: c.User, stopSignal: c.StopSignal },
      };
    },
    retain: manager.retainLayers ? (layerDirs: string[]) => manager.retainLayers!(layerDirs) : undefined,
  };
}

export async function openContainers(ctx: DaemonContext): Promise<ContainerManager> {
  const pods = (ctx as { pods?: PodLookup }).pods;
  if (!pods) throw new Error('the container subsystem needs the pods subsystem (ctx.pods) opened first');
  const runtime = makeOciRuntime({ runtimePath: ctx.config.runtime.runtimePath, conmonPath: ctx.config.runtime.conmonPath, root: ctx.config.runtime.runtimeRoot || join(ctx.config.state, 'runc') });
  const log = ctx.log.child({ subsystem: 'containers' });
  const manager = new ContainerManager({
    root: ctx.config.root,
    state: ctx.config.state,
    runtime,
    pods,
    images: imageResolverFrom(ctx.images),
    log: { info: (msg, fields) => log.info(msg, fields), warn: (msg, fields) => log.warn(msg, fields) },
  });
  await manager.init();
  return manager;
}
