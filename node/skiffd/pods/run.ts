// RunPodSandbox: pinned namespaces, the CNI network, the /etc files and (for a shared PID namespace)
// catatonit. pod.json is written last, so a crash before it leaves a directory recovery undoes.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ContainerEventType, type RunPodSandboxRequest } from '../../../proto/gen/runtime/v1/api.ts';
import { cgroupfsDriver } from '../cgroups/driver.ts';
import { resultIps } from '../network/cni.ts';
import { writeJsonAtomic } from '../util/atomic-file.ts';
import { nowNs } from '../util/clock.ts';
import { ServerError, Status, toServerError } from './errors.ts';
import { hostsFile, resolvConf, writePodFiles } from './files.ts';
import { applySysctls, pinNamespaces } from './namespaces.ts';
import { pidNamespacePath, startPidInit } from './pid-init.ts';
import type { PodEntry } from './record-file.ts';
import { rollback } from './rollback.ts';
import { nameKey, NETWORK_FILE, type PodStore } from './store.ts';
import { planPod, type PodPlan } from './validate.ts';
import { pinUserNamespaces } from './userns.ts';

export async function runPod(store: PodStore, request: RunPodSandboxRequest): Promise<string> {
  const plan = planPod(request, store.options.runtimeHandlers?.() ?? []);
  const wrongParent = (store.options.cgroups ?? cgroupfsDriver).rejectParent(plan.cgroupParent);
  if (wrongParent) throw new ServerError(Status.INVALID_ARGUMENT, `RunPodSandbox: config.linux.cgroup_parent: ${wrongParent}`);
  if (plan.userNamespace) {
    const support = (await store.options.userNamespaces?.(plan.runtimeHandler)) ?? { supported: false, reason: 'no support was detected' };
    if (!support.supported) {
      const under = plan.runtimeHandler ? ` under runtime handler "${plan.runtimeHandler}"` : '';
      throw new ServerError(Status.FAILED_PRECONDITION, `RunPodSandbox: user namespaces are not available on this node${under}: ${support.reason}`);
    }
  }
  const key = nameKey(plan.metadata);
  const taken = store.nameHolder(key);
  if (taken) {
    throw new ServerError(Status.ALREADY_EXISTS, `pod sandbox name "${key}" is already used by pod ${taken}; remove it first or use a new attempt number`);
  }
  const id = randomBytes(32).toString('hex');
  store.claimName(key, id);
  try {
    return await store.withLock(id, () => create(store, id, plan));
  } catch (err) {
    store.releaseName(key, id);
    throw toServerError(err, 'RunPodSandbox');
  }
}

async function create(store: PodStore, id: string, plan: PodPlan): Promise<string> {
  const dir = store.recordDir(id);
  const createdAt = nowNs();
  await mkdir(dir, { recursive: true });
  try {
    const podNet = plan.networkMode === 'POD';
    const shm = plan.ipcMode === 'POD' ? join(store.stateDir, id, 'shm') : undefined;
    const md = plan.metadata;
    // The network config is read first: a missing plugin fails before anything exists, and a chain
    // with the loopback plugin makes bringing `lo` up here redundant.
    const attachment = podNet
      ? await store.cni.prepare(
          id,
          join(store.nsDir(id), 'net'),
          { K8S_POD_NAMESPACE: md.namespace, K8S_POD_NAME: md.name, K8S_POD_INFRA_CONTAINER_ID: id, K8S_POD_UID: md.uid },
          plan.portMappings.length > 0 ? { portMappings: plan.portMappings } : {},
        )
      : undefined;
    const loopbackUp = !attachment?.network.plugins.some((p) => p.type === 'loopback');
    // The attachment is saved before ADD can run, so a crash during ADD can still be undone with DEL
    // (a DEL whose namespace is gone gets an empty CNI_NETNS); it is written while the pin runs.
    const pinRequest = { net: podNet, ipc: plan.ipcMode === 'POD', uts: podNet, hostname: plan.hostname, shm, loopbackUp };
    const [pinned, saved] = await Promise.allSettled([
      plan.userNamespace ? pinUserNamespaces(store.nsDir(id), plan.userNamespace, pinRequest) : pinNamespaces(store.nsDir(id), pinRequest),
      attachment ? writeJsonAtomic(join(dir, NETWORK_FILE), attachment) : undefined,
    ]);
    if (pinned.status === 'rejected') throw pinned.reason;
    if (saved.status === 'rejected') throw saved.reason;
    const pins = pinned.value;
    const paths = { resolvConf: join(dir, 'resolv.conf'), hostname: join(dir, 'hostname'), hosts: join(dir, 'hosts') };

    // What does not depend on the network runs while the CNI chain does (it is most of the call).
    let network: PodEntry['internals']['network'];
    let ips = { ip: '', additionalIps: [] as string[] };
    const attach = async () => {
      if (!attachment) return;
      attachment.result = await store.cni.add(attachment);
      network = { attachment, attached: true };
      ips = resultIps(attachment.result, attachment.ifname);
    };
    const alongside = async () => {
      const pidInit = plan.pidMode === 'POD' ? await startPidInit(id, pins, store.options.catatonit) : undefined;
      await writePodFiles({ resolvConf: paths.resolvConf, hostname: paths.hostname }, { resolvConf: await resolvConf(plan.dns), hostname: plan.hostname });
      if (plan.config.logDirectory) await mkdir(plan.config.logDirectory, { recursive: true });
      return pidInit;
    };
    // Both finish before a failure is reported, so the rollback never races a running plugin.
    const [attached, side] = await Promise.allSettled([attach(), alongside()]);
    if (attached.status === 'rejected') throw attached.reason;
    if (side.status === 'rejected') throw side.reason;
    const pidInit = side.value;
    await applySysctls(pins, plan.sysctls);
    const hosts = podNet ? hostsFile(plan.hostname, ips.ip) : await readFile('/etc/hosts', 'utf8').catch(() => hostsFile(plan.hostname, ''));
    await writePodFiles({ hosts: paths.hosts }, { hosts });

    const cgroups = store.options.cgroups ?? cgroupfsDriver;
    const cgroup = cgroups.podCgroup(plan.cgroupParent, id);
    if (cgroup.owned) await cgroups.createPod(cgroup.path, id);
    const entry: PodEntry = {
      id,
      metadata: plan.metadata,
      state: 'SANDBOX_READY',
      createdAt,
      labels: { ...plan.config.labels },
      annotations: { ...plan.config.annotations },
      logDirectory: plan.config.logDirectory,
      hostname: plan.hostname,
      namespaces: { ...pins, ...(pidInit ? { pid: pidNamespacePath(pidInit) } : {}) },
      networkMode: plan.networkMode,
      ipcMode: plan.ipcMode,
      pidMode: plan.pidMode,
      ...(plan.userNamespace ? { userNamespace: plan.userNamespace } : {}),
      cgroupParent: cgroup.path,
      runtimeHandler: plan.runtimeHandler,
      resolvConfPath: paths.resolvConf,
      hostnamePath: paths.hostname,
      hostsPath: paths.hosts,
      ...(shm ? { shmPath: shm } : {}),
      ip: ips.ip,
      additionalIps: ips.additionalIps,
      config: plan.config,
      internals: { network, pidInit, ownsCgroup: cgroup.owned },
    };
    await store.persist(entry);
    store.load(entry);
    store.log.info('pod sandbox ready', { pod: id, name: nameKey(plan.metadata), ip: ips.ip || undefined });
    store.emit(entry, ContainerEventType.CONTAINER_CREATED_EVENT);
    store.emit(entry, ContainerEventType.CONTAINER_STARTED_EVENT);
    return id;
  } catch (err) {
    await rollback(store, id).catch((undoErr) => store.log.error('cannot undo failed RunPodSandbox; a restart retries', { pod: id, err: undoErr }));
    throw err;
  }
}
