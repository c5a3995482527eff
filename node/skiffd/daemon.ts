// Wires the daemon together: directories, the context, subsystems (images, pods, containers),
// both CRI services on the gRPC server, and an orderly stop. Subsystems open before
// the socket exists, so a client never reaches a half-started daemon, and close after the server drains.
import { mkdir, realpath, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ImageServiceDefinition, RuntimeServiceDefinition } from '../../proto/gen/runtime/v1/api.ts';
import type { SkiffdConfig } from './config.ts';
import type { DaemonContext, Subsystems } from './context.ts';
import type { ContainerManager } from './containers/manager.ts';
import { openAppArmor } from './confinement/apparmor/index.ts';
import { cgroupDriver, type CgroupDriver } from './cgroups/driver.ts';
import { openImages } from './images/index.ts';
import { openPods } from './pods/index.ts';
import { openContainers } from './containers/index.ts';
import { Streaming } from './streaming/index.ts';
import type { Logger } from './logger.ts';
import { DaemonMetrics, serveMetrics } from './metrics.ts';
import { createGrpcServer, listenUnix, prepareSocketPath, StartupError } from './server.ts';
import { imageService } from './services/image/index.ts';
import { runtimeService } from './services/runtime/index.ts';
import { RUNTIME_CONFIG_FILE } from './services/runtime/update-runtime-config.ts';
import { readJson } from './util/atomic-file.ts';
import { RUNTIME_NAME, RUNTIME_VERSION } from './version.ts';
import { NodePlugins } from './nri/index.ts';

/** How long in-flight calls get to finish on shutdown before they are cut off. */
const DRAIN_MS = 10_000;

export interface Daemon {
  readonly ctx: DaemonContext;
  /** Stops accepting calls, lets in-flight ones finish (bounded), removes the socket, closes subsystems. */
  stop(reason: string): Promise<void>;
}

export async function startDaemon(given: SkiffdConfig, log: Logger): Promise<Daemon> {
  // First make sure no other daemon serves this socket: a second instance must not touch the
  // state (recovery, CNI, ...) of a live one.
  const socket = given.socketPath;
  await prepareSocketPath(socket, log);
  await mkdir(given.root, { recursive: true, mode: 0o711 });
  await mkdir(given.state, { recursive: true, mode: 0o711 });
  // Real paths from here on (a root on another disk is often reached through a symlink): the kernel's
  // mount table and realpath(3) name real paths, and every mount check compares with them.
  const [root, state] = await Promise.all([realpath(given.root), realpath(given.state)]);
  const config = root === given.root && state === given.state ? given : { ...given, root, state };

  const saved = await readJson<{ podCidr?: string }>(join(config.state, RUNTIME_CONFIG_FILE));
  const startedAt = new Date();
  const subsystems = await openSubsystems(config, log);
  const metrics = config.metrics.address ? new DaemonMetrics(() => subsystems) : undefined;
  const ctx: DaemonContext = {
    config,
    log,
    startedAt,
    network: { podCidr: saved?.podCidr ?? '' },
    metrics,
    ...subsystems,
  };

  const shuttingDown = new AbortController();
  const server = createGrpcServer(log, shuttingDown.signal, metrics);
  server.add(RuntimeServiceDefinition, runtimeService(ctx));
  server.add(ImageServiceDefinition, imageService(ctx));

  const metricsServer = metrics && config.metrics.address ? await serveMetrics(metrics, config.metrics.address, log) : undefined;
  await listenUnix(server, socket);
  const socketIno = (await stat(socket)).ino;
  log.info('serving', {
    socket,
    version: RUNTIME_VERSION,
    pid: process.pid,
    root: config.root,
    state: config.state,
    config: config.configFile ?? '(defaults)',
  });

  let stopping: Promise<void> | undefined;
  const stop = (reason: string) =>
    (stopping ??= (async () => {
      log.info('shutting down', { reason });
      shuttingDown.abort();
      // A pull stuck on a slow registry would otherwise hold the drain for its full length.
      ctx.images.cancelPulls();
      let timer: NodeJS.Timeout | undefined;
      const drained = await Promise.race([server.shutdown().then(() => true), new Promise<false>((resolve) => (timer = setTimeout(resolve, DRAIN_MS, false)))]);
      clearTimeout(timer);
      if (!drained) {
        log.warn('calls still running after drain timeout; cutting them off', { drain_ms: DRAIN_MS });
        server.forceShutdown();
      }
      metricsServer?.close();
      // Remove the socket only if it is still ours (not one a newer daemon bound meanwhile).
      const current = await stat(socket).catch(() => undefined);
      if (current?.ino === socketIno) await rm(socket, { force: true });
      // Reverse order of opening. Containers keep running (conmon holds them); only watchers stop.
      await closeQuietly(log, 'nri', { close: () => ctx.nri.stop() });
      await closeQuietly(log, 'streaming', ctx.streaming);
      await closeQuietly(log, 'containers', ctx.containers);
      await closeQuietly(log, 'images', ctx.images);
      log.info('stopped');
    })());

  return { ctx, stop };
}

/**
 * Opens images, then pods, then containers (which need both), then the streaming server. Pods reach
 * containers only when a pod goes, which cannot happen before containers are open.
 */
async function openSubsystems(config: SkiffdConfig, log: Logger): Promise<Subsystems> {
  let containers: ContainerManager | undefined;
  // Refused here, before anything opens: a driver the host cannot serve would fail every container.
  let cgroups: CgroupDriver;
  try {
    cgroups = cgroupDriver(config.runtime.cgroupDriver);
  } catch (err) {
    throw new StartupError((err as Error).message);
  }
  log.info('cgroup driver', {
    driver: cgroups.name,
    configured: config.runtime.cgroupDriver,
    ...(config.runtime.cgroupDriver === 'auto' ? { why: cgroups.name === 'systemd' ? 'systemd is PID 1' : 'systemd is not PID 1' } : {}),
  });
  let apparmor: Awaited<ReturnType<typeof openAppArmor>>;
  try {
    apparmor = await openAppArmor(config.state, log);
  } catch (err) {
    throw new StartupError((err as Error).message);
  }
  const images = await openImages(config, log);
  const nri = new NodePlugins(config.nri, log.child({ subsystem: 'nri' }), { name: RUNTIME_NAME, version: RUNTIME_VERSION });
  const plugins = () => (nri.enabled ? nri : undefined);
  const pods = await openPods(config, log, () => containers, cgroups, plugins);
  containers = await openContainers(config, log, { pods, images, cgroups, apparmor, plugins });
  // Only now do containers hold leases on the layers they mount; sweeping earlier could delete them.
  await images.sweep();
  const streaming = new Streaming({ config: config.streaming, log, containers, pods, stateDir: config.state });
  // Listening now checks [streaming] address/port at startup rather than at the first Exec.
  await streaming.open();
  // Said once here rather than at each Attach: the operator learns of it before a user asks.
  const attachMissing = streaming.attachMissing();
  if (attachMissing) log.warn('attach is not available', { reason: attachMissing.message, looked_at: attachMissing.lookedAt.join(', ') });
  // Plugins start once pods and containers are known (they are synchronized with them), before the socket.
  const running = containers;
  try {
    await nri.start({
      pod: (id) => pods.get(id),
      pods: () => pods.list(),
      container: (id) => running.get(id),
      containers: () => running.list(),
      spec: (id) => running.runtimeSpec(id),
      updateResources: (id, resources) => running.updateResources(id, resources),
      stop: (id, timeoutSeconds) => running.stop(id, timeoutSeconds),
      events: running.events,
    });
  } catch (err) {
    throw new StartupError(`NRI: ${(err as Error).message}`);
  }
  return { images, pods, containers, streaming, apparmor: apparmor.status, cgroups, nri };
}

async function closeQuietly(log: Logger, name: string, subsystem: { close(): Promise<void> }): Promise<void> {
  try {
    await subsystem.close();
  } catch (err) {
    log.error('subsystem close failed', { subsystem: name, err });
  }
}
