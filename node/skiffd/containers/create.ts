// CreateContainer: checks what can fail on bad input first, then mounts the rootfs, builds the
// OCI spec and writes the record. Nothing runs yet: the runtime learns of it at StartContainer.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize } from 'node:path';
import {
  ContainerConfig as ContainerConfigMessage,
  ContainerEventType,
  ContainerState,
  type ContainerConfig,
  type CreateContainerRequest,
  type Mount,
  type PodSandboxConfig,
} from '../../../proto/gen/runtime/v1/api.ts';
import { containerAppArmorProfile } from '../confinement/apparmor/index.ts';
import { applyDevices as applyCdiDevices, resolveDevices as resolveCdiDevices } from '../cdi/index.ts';
import { recursiveReadOnlySupport } from '../oci/features.ts';
import { OciRuntimeError, type OciRuntime } from '../oci/runtime.ts';
import type { OciSpec } from '../oci/spec.ts';
import type { PodSandboxRecord } from '../pods/types.ts';
import { nowNs } from '../util/clock.ts';
import { crashPoint } from '../util/crash-points.ts';
import { alreadyExists, failedPrecondition, internal, invalidArgument, notFound, ServerError } from './errors.ts';
import { hostDevices, resolveDevices } from './host.ts';
import { mountToJson, resourcesToJson, type ContainerRecord } from './record.ts';
import { mountRootfs, rootfsDirs } from './rootfs.ts';
import { containerUserNamespace } from './userns.ts';
import { idmapDir, planIdmappedMounts } from './idmap-mounts.ts';
import { imageVolumeSource, mountImageVolume, planImageVolumes } from './image-volumes.ts';
import { mountIdmappedRootfs } from './idmap-rootfs.ts';
import { criSignalFromNumber } from './signals.ts';
import { buildSpec, seccompProfilePath, type PodView } from './spec-builder.ts';
import { viewOf } from './status.ts';
import type { ContainerStore } from './store.ts';
import { destroy } from './teardown.ts';

export async function createContainer(store: ContainerStore, request: CreateContainerRequest): Promise<string> {
  const config = request.config;
  if (!request.podSandboxId) throw invalidArgument('pod_sandbox_id', 'empty');
  if (!config) throw invalidArgument('config', 'missing');
  if (!config.metadata?.name) throw invalidArgument('config.metadata.name', 'empty');
  const run = () => createInPod(store, request.podSandboxId, config, request.sandboxConfig);
  return store.pods.withLock ? store.pods.withLock(request.podSandboxId, run) : run();
}

async function createInPod(store: ContainerStore, podId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig | undefined): Promise<string> {
  const pod = store.pods.get(podId);
  if (!pod) throw notFound(`pod sandbox "${podId}" not found`);
  if (pod.state !== 'SANDBOX_READY') throw failedPrecondition(`pod sandbox "${podId}" is not ready (state ${pod.state})`);
  const imageName = config.image?.image ?? '';
  if (!imageName) throw invalidArgument('config.image.image', 'empty');
  const image = await store.images.resolve(imageName);
  if (!image) throw notFound(`image "${imageName}" not found: pull it first`);
  if (image.artifact) {
    throw failedPrecondition(
      `image "${imageName}" is an OCI artifact (${image.artifact.artifactType}), not a container image: it cannot be run, only mounted as an image volume`,
    );
  }
  const meta = pod.metadata;
  const fullName = [config.metadata!.name, meta.name, meta.namespace, meta.uid, String(config.metadata!.attempt)].join('_');
  const taken = store.nameHolder(fullName);
  if (taken) throw alreadyExists(`container name "${fullName}" is already in use by container ${taken}`);
  if (config.logPath && (isAbsolute(config.logPath) || normalize(config.logPath).startsWith('..'))) {
    throw invalidArgument('config.log_path', `"${config.logPath}" must be relative to the pod's log_directory`);
  }
  // Host-side lookups that can fail on bad input, before anything is created.
  const podUserns = pod.namespaces.user ? pod.userNamespace : undefined;
  containerUserNamespace(config.linux?.securityContext?.namespaceOptions?.usernsOptions, podUserns);
  const idmapped = planIdmappedMounts(config.mounts, podUserns);
  const resolved = await resolveMounts(config.mounts);
  // The pod's runtime handler, checked when the pod was made; a handler since taken out of the config is refused here.
  let runtime: OciRuntime;
  try {
    runtime = store.runtimes.get(pod.runtimeHandler);
  } catch (err) {
    throw failedPrecondition(`pod sandbox "${podId}": ${(err as Error).message}`);
  }
  await checkRecursiveReadOnly(runtime, config.mounts);
  const devices = resolveDevices(config.devices);
  const privileged = config.linux?.securityContext?.privileged ?? false;
  const targetId = config.linux?.securityContext?.namespaceOptions?.targetId;
  let targetPidNamespace: string | undefined;
  if (targetId) {
    const target = store.get(targetId);
    const running = target && target.podSandboxId === podId && target.pid && (await viewOf(store, target)).state === ContainerState.CONTAINER_RUNNING;
    if (!running) throw invalidArgument('linux.security_context.namespace_options.target_id', `no running container "${targetId}" in pod ${podId}`);
    targetPidNamespace = `/proc/${target!.pid}/ns/pid`;
  }

  const imageVolumes = await planImageVolumes(config.mounts, store.images);
  const cdiDevices = resolveCdiDevices(config, store.cdi);
  const seccompProfile = await loadSeccompProfile(config);
  const apparmorProfile = containerAppArmorProfile(config.linux?.securityContext, store.apparmor);

  const id = randomBytes(32).toString('hex');
  const dir = store.dir(id);
  // ID-mapped volumes: config.json binds their clones, made when the runtime creates the container.
  const idmappedMounts = idmapped.map((i) => ({ source: resolved[i].hostPath, target: join(idmapDir(store.idmapDir, id), String(i)) }));
  const mounts = resolved.map((m, i) => (idmapped.includes(i) ? { ...m, hostPath: idmappedMounts[idmapped.indexOf(i)].target } : m));
  const logPath = pod.logDirectory && config.logPath ? join(pod.logDirectory, config.logPath) : '';
  const record: ContainerRecord = {
    version: 1,
    id,
    podSandboxId: podId,
    fullName,
    metadata: { name: config.metadata!.name, attempt: config.metadata!.attempt },
    image: {
      image: imageName,
      annotations: { ...(config.image?.annotations ?? {}) },
      userSpecifiedImage: config.image?.userSpecifiedImage ?? '',
      runtimeHandler: config.image?.runtimeHandler ?? '',
    },
    imageRef: image.ref,
    imageId: image.id,
    imageTag: image.tag,
    labels: { ...config.labels },
    annotations: { ...config.annotations },
    logPath,
    conmonLogPath: logPath || join(dir, 'console.log'),
    phase: 'creating',
    createdAt: String(nowNs()),
    mounts: config.mounts.map(mountToJson),
    resources: resourcesToJson(config.linux?.resources),
    user: { uid: 0, gid: 0, additionalGids: [] },
    stopSignal: 15,
    stopSignalName: 'SIGTERM',
    criStopSignal: 0,
    lowerDirs: image.layers,
    cgroupsPath: '',
    tty: config.tty,
    stdin: config.stdin,
    stdinOnce: config.stdinOnce,
    runtime: store.runtimes.resolve(pod.runtimeHandler),
    ...(podUserns ? { userNamespace: podUserns, userNamespacePath: pod.namespaces.user } : {}),
    ...(idmappedMounts.length > 0 ? { idmappedMounts } : {}),
    ...(imageVolumes.length > 0 ? { imageVolumes } : {}),
  };
  const userns = podUserns;
  store.claimName(fullName, id);
  store.retainImage(id, [...image.layers, ...imageVolumes.flatMap((v) => v.layers)]);
  return store.withLock(id, async () => {
    let mounting: Promise<void> | undefined;
    let pluginSpec: OciSpec | undefined;
    try {
      // No record until the end: a directory without one is a create that never finished, and
      // recovery removes it (unmounting first).
      // The runtime sets up a container in a user namespace as that namespace's root, an unprivileged
      // host ID: it must be able to pass through (not list) the directory to reach the rootfs.
      await mkdir(dir, { recursive: true, mode: userns ? 0o711 : 0o700 });
      const dirs = rootfsDirs(dir);
      mounting =
        userns && pod.namespaces.user
          ? mountIdmappedRootfs(dirs, image.layers, idmapDir(store.idmapDir, id), pod.namespaces.user, userns, true)
          : mountRootfs(dirs, image.layers, true);
      mounting.catch(() => {}); // awaited below; a failure before that is not unhandled
      // Read from the image only once per stack of layers. A single layer is its own merged view:
      // the spec is built from it while the mount is made.
      let accounts = store.imageAccounts.cached(image.layers);
      if (accounts === undefined) {
        if (image.layers.length > 1) await mounting;
        accounts = await store.imageAccounts.read(image.layers, image.layers.length === 1 ? image.layers[0] : dirs.merged);
      }
      const { passwd, group } = accounts;
      const volumeUserns = userns && pod.namespaces.user ? { path: pod.namespaces.user, stagingDir: idmapDir(store.idmapDir, id) } : undefined;
      for (const v of imageVolumes) await mountImageVolume(dir, v, volumeUserns);
      const imageVolumeSources = new Map(await Promise.all(imageVolumes.map(async (v) => [v.index, await imageVolumeSource(dir, v)] as const)));
      const built = buildSpec({
        id,
        config,
        sandboxConfig,
        pod: podView(pod),
        image: image.config,
        rootfsPath: dirs.merged,
        passwd,
        group,
        mounts,
        devices,
        hostDevices: privileged ? hostDevices() : undefined,
        targetPidNamespace,
        seccompProfile,
        apparmorProfile,
        imageVolumeSources,
        host: store.host,
      });
      await Promise.all([
        mkdir(store.bundle(id), { recursive: true }),
        mkdir(store.persistDir(id), { recursive: true }),
        mkdir(dirname(record.conmonLogPath), { recursive: true }),
      ]);
      applyCdiDevices(built.spec, cdiDevices);
      const plugins = store.options.plugins?.();
      const ownCgroupsPath = built.spec.linux.cgroupsPath;
      if (plugins) {
        pluginSpec = built.spec;
        await plugins.createContainer(pod, record, built.spec, (spec, names) =>
          applyCdiDevices(spec, resolveCdiDevices(ContainerConfigMessage.fromPartial({ CDIDevices: names.map((name) => ({ name })) }), store.cdi)),
        );
      }
      await store.saveRuntimeSpec(id, built.spec);
      if (imageVolumes.length > 0) crashPoint('create-container-mounted');
      const pidNs = built.spec.linux.namespaces.find((n) => n.type === 'pid');
      const done: ContainerRecord = {
        ...record,
        phase: 'created',
        user: { uid: built.user.uid, gid: built.user.gid, additionalGids: built.user.additionalGids },
        stopSignal: built.stopSignal,
        stopSignalName: built.stopSignalName,
        criStopSignal: config.stopSignal || criSignalFromNumber(built.stopSignal),
        // Where the cgroup is in the hierarchy (not the spec's form: the systemd driver's is slice:prefix:name),
        // unless a plugin moved it.
        cgroupsPath:
          built.spec.linux.cgroupsPath && built.spec.linux.cgroupsPath !== ownCgroupsPath
            ? store.host.cgroups.cgroupPathOfSpec(built.spec.linux.cgroupsPath)
            : built.cgroupPath,
        killAll: !pidNs || !!pidNs.path,
      };
      // The record does not wait for the mount: recovery mounts the rootfs of a created container
      // that lacks it. The call still answers only once the rootfs is mounted.
      await store.save(done);
      await mounting;
      store.mounted.add(id);
      store.emit(done, ContainerEventType.CONTAINER_CREATED_EVENT);
      return id;
    } catch (err) {
      // The mount may still be under way; the cleanup must come after it.
      await mounting?.catch(() => {});
      await destroy(store, id, record).catch((e) => store.log.warn('cleanup after a failed create failed', { id, err: String(e) }));
      if (pluginSpec) await store.options.plugins?.()?.createFailed(pod, record, pluginSpec);
      store.releaseName(fullName, id);
      if (err instanceof ServerError) throw err;
      if (err instanceof OciRuntimeError) throw internal(`creating container ${config.metadata!.name}: ${err.message}`);
      throw internal(`creating container ${config.metadata!.name}: ${(err as Error).message}`);
    }
  });
}

/** A recursive read-only mount the OCI runtime cannot make is refused, never quietly made plain read-only. */
async function checkRecursiveReadOnly(runtime: OciRuntime, mounts: Mount[]): Promise<void> {
  const i = mounts.findIndex((m) => m.recursiveReadOnly);
  if (i < 0) return;
  const rro = recursiveReadOnlySupport(await runtime.features());
  if (!rro.supported) throw invalidArgument(`config.mounts[${i}].recursive_read_only`, `not supported by the OCI runtime ${runtime.path}: ${rro.reason}`);
}

async function resolveMounts(mounts: Mount[]): Promise<Mount[]> {
  return Promise.all(
    mounts.map(async (m, i) => {
      if (m.image?.image) return m;
      if (!m.hostPath) throw invalidArgument(`config.mounts[${i}].host_path`, 'empty');
      try {
        return { ...m, hostPath: await realpath(m.hostPath) };
      } catch {
        throw invalidArgument(`config.mounts[${i}].host_path`, `${m.hostPath} does not exist`);
      }
    }),
  );
}

function podView(pod: PodSandboxRecord): PodView {
  return {
    id: pod.id,
    hostname: pod.hostname,
    namespaces: {
      ...pod.namespaces,
      // The record's pid path exists only for POD pid mode; CONTAINER mode gets a fresh namespace.
      pid: pod.pidMode === 'POD' ? pod.namespaces.pid : undefined,
    },
    cgroupParent: pod.cgroupParent,
    resolvConfPath: pod.resolvConfPath || undefined,
    hostnamePath: pod.hostnamePath || undefined,
    hostsPath: pod.hostsPath || undefined,
    shmPath: pod.shmPath,
    config: pod.config,
    ...(pod.userNamespace ? { userNamespace: pod.userNamespace } : {}),
  };
}

/** A Localhost seccomp profile: an OCI seccomp JSON file on the node. */
async function loadSeccompProfile(config: ContainerConfig): Promise<unknown> {
  const path = seccompProfilePath(config);
  if (!path) return undefined;
  const field = 'linux.security_context.seccomp.localhost_ref';
  if (!isAbsolute(path)) throw invalidArgument(field, `"${path}" is not an absolute path`);
  let profile: { defaultAction?: unknown };
  try {
    profile = JSON.parse(await readFile(path, 'utf8')) as { defaultAction?: unknown };
  } catch (err) {
    throw invalidArgument(field, `cannot read seccomp profile ${path}: ${(err as Error).message}`);
  }
  if (typeof profile !== 'object' || profile === null || typeof profile.defaultAction !== 'string') {
    throw invalidArgument(field, `${path} is not a seccomp profile (no "defaultAction")`);
  }
  return profile;
}
