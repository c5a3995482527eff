// Opens the container subsystem for the daemon (ctx.containers): an OCI runtime per runtime handler,
// records under --root, exit files and attach sockets under --state, pods and images from their
// subsystems. Recovery (reconciling records with runc and conmon's exit files) finishes here,
// before the socket listens.
import type { SkiffdConfig } from '../config.ts';
import type { AppArmorPolicy } from '../confinement/apparmor/index.ts';
import { CdiRegistry } from '../cdi/index.ts';
import { cgroupfsDriver, type CgroupDriver } from '../cgroups/driver.ts';
import type { ImageManager } from '../images/image-manager.ts';
import type { Logger } from '../logger.ts';
import { RuntimeHandlers } from '../oci/handlers.ts';
import { makeOciRuntime } from '../oci/index.ts';
import { ContainerManager } from './manager.ts';
import type { ContainerPluginHooks, ImageResolver, PodLookup, ResolvedImage } from './types.ts';

export { ContainerManager } from './manager.ts';
export type { ContainerView, ContainerEvent, ResolvedImage, ImageResolver, PodLookup } from './types.ts';

/** The image subsystem as containers use it: an image's id, digest, layers and run config. */
export function imageResolver(images: ImageManager): ImageResolver {
  return {
    resolve(spec: string): ResolvedImage | undefined {
      const record = images.resolve(spec);
      if (!record) return undefined;
      const c = images.runConfig(record.id);
      const doc = images.imageConfig(record.id);
      return {
        id: record.id,
        ref: record.repoDigests[0] ?? record.id,
        tag: record.repoTags[0],
        layers: images.layerDirs(record.id),
        platform: { os: doc.os, architecture: doc.architecture },
        artifact: record.artifact,
        config: {
          entrypoint: c.Entrypoint ?? undefined,
          cmd: c.Cmd ?? undefined,
          env: c.Env ?? undefined,
          workingDir: c.WorkingDir,
          user: c.User,
          stopSignal: c.StopSignal,
        },
      };
    },
    retain: (layerDirs: string[]) => images.retainLayers(layerDirs),
  };
}

export async function openContainers(
  config: SkiffdConfig,
  log: Logger,
  deps: { pods: PodLookup; images: ImageManager; cgroups?: CgroupDriver; apparmor?: AppArmorPolicy; plugins?: () => ContainerPluginHooks | undefined },
): Promise<ContainerManager> {
  const cgroups = deps.cgroups ?? cgroupfsDriver;
  const runtime = new RuntimeHandlers(
    Object.fromEntries(
      Object.values(config.runtime.handlers).map((h) => [
        h.name,
        makeOciRuntime({
          runtimePath: h.runtimePath,
          conmonPath: config.runtime.conmonPath,
          root: h.runtimeRoot,
          runtimeFlags: cgroups.runtimeFlags,
          conmonFlags: cgroups.conmonFlags,
        }),
      ]),
    ),
    config.runtime.defaultRuntime,
  );
  const manager = new ContainerManager({
    root: config.root,
    state: config.state,
    runtime,
    pods: deps.pods,
    images: imageResolver(deps.images),
    log: log.child({ subsystem: 'containers' }),
    cgroups,
    apparmor: deps.apparmor,
    cdi: { enabled: config.cdi.enable, registry: new CdiRegistry(config.cdi.specDirs) },
    plugins: deps.plugins,
  });
  await manager.init();
  return manager;
}
