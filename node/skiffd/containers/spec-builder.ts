// Builds a container's OCI runtime spec from the CRI ContainerConfig, the pod and the image config.
// Pure: every fact about the host (devices, passwd text, oom_score_adj...) comes in as input.
import {
  MountPropagation,
  SecurityProfile_ProfileType,
  NamespaceMode,
  SupplementalGroupsPolicy,
  type ContainerConfig,
  type LinuxContainerResources,
  type Mount,
  type PodSandboxConfig,
} from '../../../proto/gen/runtime/v1/api.ts';
import type { CgroupDriver } from '../cgroups/driver.ts';
import type { OciDevice, OciDeviceRule, OciMount, OciNamespace, OciResources, OciSpec } from '../oci/spec.ts';
import { DEFAULT_CAPABILITIES, normalizeCapability } from '../confinement/capabilities.ts';
import { procPaths } from '../confinement/proc-paths.ts';
import { defaultSeccompProfile } from '../confinement/seccomp.ts';
import { invalidArgument } from './errors.ts';
import { criSignalName, signalNumber } from './signals.ts';
import { resolveUser, UserError, type ResolvedUser } from './users.ts';
import { containerUserNamespace, refuseNodeNamespaces, refuseUnmappedUser } from './userns.ts';
import { ociMappings, type UserNamespaceMappings } from '../pods/userns.ts';

export interface ImageConfigView {
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  workingDir?: string;
  user?: string;
  stopSignal?: string;
}

/** What the spec needs from the pod sandbox record. */
export interface PodView {
  id: string;
  hostname?: string;
  /** Pinned namespace files; absent means the host's (net/ipc/uts) or the container's own (pid). */
  namespaces: { user?: string; net?: string; ipc?: string; uts?: string; pid?: string };
  /** The ID mappings of the pod's own user namespace (`namespaces.user`). */
  userNamespace?: UserNamespaceMappings;
  cgroupParent?: string;
  resolvConfPath?: string;
  hostnamePath?: string;
  hostsPath?: string;
  shmPath?: string;
  config?: PodSandboxConfig;
}

export type CgroupMode = 'v1' | 'hybrid' | 'v2';

export interface HostFacts {
  /** skiffd's own /proc/self/oom_score_adj: containers never go below it (no CAP_SYS_RESOURCE here). */
  daemonOomScoreAdj: number;
  /** The daemon's bounding capability set: what "all capabilities" can mean here. */
  capabilities: string[];
  cgroupMode: CgroupMode;
  /** memory.memsw.* exists (cgroup v1 swap accounting). */
  swapAccounting: boolean;
  /**
   * The hugetlb controller is available. Without it runc cannot apply hugepage limits, and a kubelet
   * sends them (0) for every page size of the node: they are left out, as containerd does.
   */
  hugetlb: boolean;
  /** Parent cgroup when the pod names none. */
  defaultCgroupParent: string;
  /** Who makes the container's cgroup: cgroupfs paths, or systemd scopes in the pod's slice. */
  cgroups: CgroupDriver;
}

/** A CRI device already looked up on the host. */
export interface ResolvedDevice extends OciDevice {
  permissions: string;
}

export interface SpecInput {
  id: string;
  config: ContainerConfig;
  sandboxConfig?: PodSandboxConfig;
  pod: PodView;
  image: ImageConfigView;
  rootfsPath: string;
  /** Contents of the rootfs's /etc/passwd and /etc/group ('' when absent). */
  passwd: string;
  group: string;
  /** config.mounts with host paths resolved (symlinks followed), same order. */
  mounts: Mount[];
  devices: ResolvedDevice[];
  /** All host devices, for privileged containers. */
  hostDevices?: OciDevice[];
  /** /proc/PID/ns/pid of the target container for NamespaceMode.TARGET. */
  targetPidNamespace?: string;
  /** The parsed Localhost seccomp profile (OCI format), when the config names one. */
  seccompProfile?: unknown;
  /** The AppArmor profile to run under (resolved by apparmor/), absent for none. */
  apparmorProfile?: string;
  /** The host path to bind for each image volume, by its index in `mounts` (image-volumes.ts). */
  imageVolumeSources?: ReadonlyMap<number, string>;
  host: HostFacts;
}

export interface BuiltSpec {
  spec: OciSpec;
  /** The container's cgroup in the hierarchy once the runtime made it (where its stats are read). */
  cgroupPath: string;
  user: ResolvedUser;
  stopSignal: number;
  stopSignalName: string;
}

export const DEFAULT_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const sec = (config: ContainerConfig) => config.linux?.securityContext;

export function buildSpec(input: SpecInput): BuiltSpec {
  const { config, pod, image } = input;
  const sc = sec(config);
  const privileged = sc?.privileged ?? false;
  const sandboxConfig = input.sandboxConfig ?? pod.config;

  const args = processArgs(config, image);
  const user = containerUser(input);
  const env = mergeEnv(image.env ?? [], config, user, pod.hostname);
  const stop = stopSignal(config, image);

  const capSet = capabilities(config, privileged, input.host.capabilities);
  const ambient = (sc?.capabilities?.addAmbientCapabilities ?? []).map((c, i) => {
    const n = normalizeCapability(c);
    if (!n || n === 'ALL') throw invalidArgument(`linux.security_context.capabilities.add_ambient_capabilities[${i}]`, `unknown capability "${c}"`);
    return n;
  });
  const withAmbient = [...new Set([...capSet, ...ambient])];

  const userns = containerUserNamespace(sc?.namespaceOptions?.usernsOptions, pod.namespaces.user ? pod.userNamespace : undefined);
  if (userns) {
    refuseNodeNamespaces(sc?.namespaceOptions);
    refuseUnmappedUser(user, userns);
  }
  const namespaces = buildNamespaces(input);
  if (userns) namespaces.unshift({ type: 'user', path: pod.namespaces.user });
  const ownUts = namespaces.some((n) => n.type === 'uts');
  const resources = toOciResources(config.linux?.resources, input.host);
  resources.devices = deviceRules(privileged, input.devices);

  const mounts = buildMounts(input, privileged);
  const propagation = rootfsPropagation(input.mounts);

  const podCgroup = podCgroupOf(input);
  const spec: OciSpec = {
    ociVersion: '1.0.2',
    process: {
      terminal: config.tty,
      user: { uid: user.uid, gid: user.gid, additionalGids: user.additionalGids },
      args,
      env,
      cwd: config.workingDir || image.workingDir || '/',
      capabilities: { bounding: withAmbient, effective: withAmbient, permitted: withAmbient, inheritable: [], ambient },
      noNewPrivileges: sc?.noNewPrivs ?? false,
      oomScoreAdj: oomScoreAdj(config.linux?.resources, input.host.daemonOomScoreAdj),
      ...(input.apparmorProfile ? { apparmorProfile: input.apparmorProfile } : {}),
    },
    root: { path: input.rootfsPath, readonly: sc?.readonlyRootfs ?? false },
    mounts,
    annotations: {
      'io.kubernetes.cri.container-type': 'container',
      'io.kubernetes.cri.container-name': config.metadata?.name ?? '',
      'io.kubernetes.cri.sandbox-id': pod.id,
      'io.kubernetes.cri.image-name': config.image?.image ?? '',
    },
    linux: {
      namespaces,
      devices: [...(privileged ? (input.hostDevices ?? []) : []), ...input.devices.map(({ permissions: _p, ...d }) => d)],
      resources,
      cgroupsPath: input.host.cgroups.containerCgroupsPath(podCgroup, input.id),
      sysctl: sysctls(sandboxConfig, input.pod),
    },
  };
  if (userns) {
    // Joined by path; runc still wants the mappings (they tell it the host IDs of the container's root).
    spec.linux.uidMappings = ociMappings(userns.uids);
    spec.linux.gidMappings = ociMappings(userns.gids);
  }
  if (ownUts && pod.hostname) spec.hostname = pod.hostname;
  if (propagation) spec.linux.rootfsPropagation = propagation;
  if (!privileged) {
    Object.assign(spec.linux, procPaths(sc));
    if (input.seccompProfile !== undefined) spec.linux.seccomp = input.seccompProfile;
    else if (wantsRuntimeDefaultSeccomp(config)) spec.linux.seccomp = defaultSeccompProfile(withAmbient);
  }
  // Drop empty optional parts so config.json stays readable.
  if (spec.linux.devices!.length === 0) delete spec.linux.devices;
  if (Object.keys(spec.linux.sysctl!).length === 0) delete spec.linux.sysctl;
  return { spec, cgroupPath: input.host.cgroups.containerCgroupPath(podCgroup, input.id), user, stopSignal: stop.number, stopSignalName: stop.name };
}

/** Kubernetes semantics: command replaces the entrypoint and drops the image cmd; args replace cmd. */
export function processArgs(config: ContainerConfig, image: ImageConfigView): string[] {
  let argv: string[];
  if (config.command.length > 0) argv = [...config.command, ...config.args];
  else argv = [...(image.entrypoint ?? []), ...(config.args.length > 0 ? config.args : (image.cmd ?? []))];
  if (argv.length === 0) throw invalidArgument('config.command', 'no command: neither the container config nor the image gives one');
  return argv;
}

function containerUser(input: SpecInput): ResolvedUser {
  const sc = sec(input.config);
  const runAsUser = sc?.runAsUser ? Number(sc.runAsUser.value) : undefined;
  const runAsGroup = sc?.runAsGroup ? Number(sc.runAsGroup.value) : undefined;
  if (sc?.runAsUsername && runAsUser !== undefined) {
    throw invalidArgument('linux.security_context.run_as_username', 'only one of run_as_user and run_as_username may be set');
  }
  if (runAsGroup !== undefined && runAsUser === undefined && !sc?.runAsUsername) {
    throw invalidArgument('linux.security_context.run_as_group', 'needs run_as_user or run_as_username');
  }
  const policy = sc?.supplementalGroupsPolicy ?? SupplementalGroupsPolicy.Merge;
  if (policy !== SupplementalGroupsPolicy.Merge && policy !== SupplementalGroupsPolicy.Strict) {
    throw invalidArgument('linux.security_context.supplemental_groups_policy', `unknown policy ${policy}: Merge (0) or Strict (1)`);
  }
  try {
    return resolveUser(
      {
        uid: runAsUser,
        username: sc?.runAsUsername || undefined,
        gid: runAsGroup,
        imageUser: input.image.user,
        supplementalGroups: (sc?.supplementalGroups ?? []).map(Number),
        strictGroups: policy === SupplementalGroupsPolicy.Strict,
      },
      input.passwd,
      input.group,
    );
  } catch (err) {
    if (err instanceof UserError) throw invalidArgument(err.field, err.message);
    throw err;
  }
}

function mergeEnv(imageEnv: string[], config: ContainerConfig, user: ResolvedUser, hostname?: string): string[] {
  const order: string[] = [];
  const values = new Map<string, string>();
  const set = (key: string, value: string) => {
    if (!values.has(key)) order.push(key);
    values.set(key, value);
  };
  for (const kv of imageEnv) {
    const i = kv.indexOf('=');
    if (i > 0) set(kv.slice(0, i), kv.slice(i + 1));
  }
  config.envs.forEach((kv, i) => {
    if (!kv.key) throw invalidArgument(`config.envs[${i}].key`, 'an environment variable needs a name');
    set(kv.key, Buffer.from(kv.value).toString('utf8'));
  });
  if (!values.has('PATH')) set('PATH', DEFAULT_PATH.slice(5));
  if (!values.has('HOSTNAME') && hostname) set('HOSTNAME', hostname);
  if (!values.has('HOME')) set('HOME', user.home || '/');
  return order.map((k) => `${k}=${values.get(k)}`);
}

function stopSignal(config: ContainerConfig, image: ImageConfigView): { number: number; name: string } {
  const fromConfig = criSignalName(config.stopSignal);
  const name = fromConfig ?? (image.stopSignal || 'SIGTERM');
  const number = signalNumber(name);
  if (number === undefined) {
    if (fromConfig) throw invalidArgument('config.stop_signal', `unsupported signal ${name}`);
    return { number: 15, name: 'SIGTERM' };
  }
  return { number, name: /^\d+$/.test(name) ? name : name.toUpperCase().startsWith('SIG') ? name.toUpperCase() : `SIG${name.toUpperCase()}` };
}

function capabilities(config: ContainerConfig, privileged: boolean, all: string[]): string[] {
  if (privileged) return all;
  const caps = config.linux?.securityContext?.capabilities;
  const norm = (list: string[], field: string) =>
    list.map((c, i) => {
      const n = normalizeCapability(c);
      if (!n) throw invalidArgument(`linux.security_context.capabilities.${field}[${i}]`, `unknown capability "${c}"`);
      return n;
    });
  const add = norm(caps?.addCapabilities ?? [], 'add_capabilities');
  const drop = norm(caps?.dropCapabilities ?? [], 'drop_capabilities');
  let set = new Set<string>(DEFAULT_CAPABILITIES);
  if (add.includes('ALL')) set = new Set(all);
  if (drop.includes('ALL')) set = new Set();
  for (const c of add) if (c !== 'ALL') set.add(c);
  for (const c of drop) if (c !== 'ALL') set.delete(c);
  return [...set].filter((c) => all.includes(c));
}

export function oomScoreAdj(resources: LinuxContainerResources | undefined, daemonAdj: number): number {
  const requested = resources ? Number(resources.oomScoreAdj) : 0;
  return Math.min(1000, Math.max(requested, daemonAdj, -1000));
}

function buildNamespaces(input: SpecInput): OciNamespace[] {
  const nsOpts = sec(input.config)?.namespaceOptions;
  const { pod } = input;
  const out: OciNamespace[] = [{ type: 'mount' }];
  // Network and IPC: the pod's pinned namespaces; a NODE mode container of a POD mode pod still gets the host's.
  const netMode = nsOpts?.network ?? NamespaceMode.POD;
  if (netMode !== NamespaceMode.NODE && pod.namespaces.net) out.push({ type: 'network', path: pod.namespaces.net });
  const ipcMode = nsOpts?.ipc ?? NamespaceMode.POD;
  if (ipcMode !== NamespaceMode.NODE && pod.namespaces.ipc) out.push({ type: 'ipc', path: pod.namespaces.ipc });
  if (pod.namespaces.uts && netMode !== NamespaceMode.NODE) out.push({ type: 'uts', path: pod.namespaces.uts });
  const pidMode = nsOpts?.pid ?? NamespaceMode.CONTAINER;
  switch (pidMode) {
    case NamespaceMode.NODE:
      break;
    case NamespaceMode.POD:
      out.push(pod.namespaces.pid ? { type: 'pid', path: pod.namespaces.pid } : { type: 'pid' });
      break;
    case NamespaceMode.TARGET:
      if (!input.targetPidNamespace) {
        throw invalidArgument('linux.security_context.namespace_options.target_id', 'TARGET pid mode needs a running container in the same pod');
      }
      out.push({ type: 'pid', path: input.targetPidNamespace });
      break;
    default:
      out.push({ type: 'pid' });
  }
  if (input.host.cgroupMode === 'v2') out.push({ type: 'cgroup' });
  return out;
}

/** The pod cgroup's path: what RunPodSandbox chose, else the parent the request names, else the default. */
function podCgroupOf(input: SpecInput): string {
  if (input.pod.cgroupParent) return input.pod.cgroupParent;
  const given = input.sandboxConfig?.linux?.cgroupParent ?? '';
  const rejected = input.host.cgroups.rejectParent(given);
  if (rejected) throw invalidArgument('sandbox_config.linux.cgroup_parent', rejected);
  return given ? input.host.cgroups.podCgroup(given, input.pod.id).path : input.host.defaultCgroupParent;
}

/** CRI resources -> OCI linux.resources (also used by UpdateContainerResources). */
export function toOciResources(r: LinuxContainerResources | undefined, host: Pick<HostFacts, 'cgroupMode' | 'swapAccounting' | 'hugetlb'>): OciResources {
  const out: OciResources = {};
  if (!r) return out;
  const cpu: NonNullable<OciResources['cpu']> = {};
  if (r.cpuShares > 0n) cpu.shares = Number(r.cpuShares);
  if (r.cpuQuota > 0n) cpu.quota = Number(r.cpuQuota);
  if (r.cpuPeriod > 0n) cpu.period = Number(r.cpuPeriod);
  if (r.cpusetCpus) cpu.cpus = r.cpusetCpus;
  if (r.cpusetMems) cpu.mems = r.cpusetMems;
  if (Object.keys(cpu).length > 0) out.cpu = cpu;
  if (r.memoryLimitInBytes < 0n) throw invalidArgument('linux.resources.memory_limit_in_bytes', 'must not be negative');
  if (r.memoryLimitInBytes > 0n) {
    out.memory = { limit: Number(r.memoryLimitInBytes) };
    if (r.memorySwapLimitInBytes > 0n) out.memory.swap = Number(r.memorySwapLimitInBytes);
    else if (host.swapAccounting || host.cgroupMode === 'v2') out.memory.swap = Number(r.memoryLimitInBytes);
  }
  if (r.hugepageLimits.length > 0) {
    const limits = r.hugepageLimits.map((h, i) => {
      if (!/^\d+[KMG]B$/.test(h.pageSize)) throw invalidArgument(`linux.resources.hugepage_limits[${i}].page_size`, `"${h.pageSize}" is not like 2MB or 1GB`);
      return { pageSize: h.pageSize, limit: Number(h.limit) };
    });
    // Checked either way, applied only where a controller can enforce them.
    if (host.hugetlb) out.hugepageLimits = limits;
  }
  // cgroup v2 keys only make sense (and runc only accepts them) on a pure v2 host.
  if (host.cgroupMode === 'v2' && Object.keys(r.unified).length > 0) out.unified = { ...r.unified };
  return out;
}

function deviceRules(privileged: boolean, devices: ResolvedDevice[]): OciDeviceRule[] {
  if (privileged) return [{ allow: true, access: 'rwm' }];
  return [
    { allow: false, access: 'rwm' },
    ...devices.map((d) => ({ allow: true, type: d.type, major: d.major, minor: d.minor, access: d.permissions || 'rwm' })),
  ];
}

function sysctls(sandboxConfig: PodSandboxConfig | undefined, pod: PodView): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(sandboxConfig?.linux?.sysctls ?? {})) {
    const isNet = key.startsWith('net.');
    const isIpc = key.startsWith('kernel.shm') || key.startsWith('kernel.msg') || key === 'kernel.sem' || key.startsWith('fs.mqueue.');
    if (isNet && !pod.namespaces.net)
      throw invalidArgument(`sandbox_config.linux.sysctls[${key}]`, 'network sysctls need the pod network namespace (not host network)');
    if (isIpc && !pod.namespaces.ipc) throw invalidArgument(`sandbox_config.linux.sysctls[${key}]`, 'IPC sysctls need the pod IPC namespace (not host IPC)');
    if (!isNet && !isIpc && key !== 'kernel.domainname' && key !== 'kernel.hostname') {
      throw invalidArgument(`sandbox_config.linux.sysctls[${key}]`, 'not a namespaced sysctl');
    }
    out[key] = value;
  }
  return out;
}

function propagationOption(p: MountPropagation): string {
  if (p === MountPropagation.PROPAGATION_HOST_TO_CONTAINER) return 'rslave';
  if (p === MountPropagation.PROPAGATION_BIDIRECTIONAL) return 'rshared';
  return 'rprivate';
}

function rootfsPropagation(mounts: Mount[]): string | undefined {
  if (mounts.some((m) => m.propagation === MountPropagation.PROPAGATION_BIDIRECTIONAL)) return 'rshared';
  if (mounts.some((m) => m.propagation === MountPropagation.PROPAGATION_HOST_TO_CONTAINER)) return 'rslave';
  return undefined;
}

function buildMounts(input: SpecInput, privileged: boolean): OciMount[] {
  const { pod } = input;
  const readonlyRootfs = sec(input.config)?.readonlyRootfs ?? false;
  const ipcMode = sec(input.config)?.namespaceOptions?.ipc ?? NamespaceMode.POD;
  const user: OciMount[] = input.mounts.map((m, i) => {
    if (!m.containerPath.startsWith('/')) throw invalidArgument(`config.mounts[${i}].container_path`, `"${m.containerPath}" is not absolute`);
    const imageSource = m.image?.image ? input.imageVolumeSources?.get(i) : undefined;
    if (m.image?.image && !imageSource) throw invalidArgument(`config.mounts[${i}].image`, `the image volume ${m.image.image} is not mounted`);
    // An image volume: read-only, and nothing in it runs as set-ID or a device (the API's contract: ro, noexec).
    if (imageSource)
      return { destination: cleanPath(m.containerPath), type: 'bind', source: imageSource, options: ['rbind', 'rprivate', 'ro', 'nosuid', 'nodev', 'noexec'] };
    if (!m.hostPath) throw invalidArgument(`config.mounts[${i}].host_path`, 'empty');
    if (m.recursiveReadOnly && (!m.readonly || m.propagation !== MountPropagation.PROPAGATION_PRIVATE)) {
      throw invalidArgument(`config.mounts[${i}].recursive_read_only`, 'needs readonly and private propagation');
    }
    const options = ['rbind', propagationOption(m.propagation), m.readonly ? 'ro' : 'rw'];
    if (m.recursiveReadOnly) options.push('rro');
    return { destination: cleanPath(m.containerPath), type: 'bind', source: m.hostPath, options };
  });
  const taken = new Set(user.map((m) => m.destination));
  const sysRo = privileged ? [] : ['ro'];
  const defaults: OciMount[] = [
    { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
    { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
    { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'] },
    { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
    { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', ...sysRo] },
    { destination: '/sys/fs/cgroup', type: 'cgroup', source: 'cgroup', options: ['nosuid', 'noexec', 'nodev', 'relatime', ...sysRo] },
  ];
  // /dev/shm: the pod's shared tmpfs when it has one, the host's for host IPC, else a private tmpfs.
  if (ipcMode === NamespaceMode.NODE || !pod.namespaces.ipc) {
    defaults.push({ destination: '/dev/shm', type: 'bind', source: '/dev/shm', options: ['rbind', 'rprivate', 'rw'] });
  } else if (pod.shmPath) {
    defaults.push({ destination: '/dev/shm', type: 'bind', source: pod.shmPath, options: ['rbind', 'rprivate', 'rw'] });
  } else {
    defaults.push({ destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'] });
  }
  const podFiles: [string, string | undefined][] = [
    ['/etc/resolv.conf', pod.resolvConfPath],
    ['/etc/hosts', pod.hostsPath],
    ['/etc/hostname', pod.hostnamePath],
  ];
  for (const [dest, source] of podFiles) {
    if (source) defaults.push({ destination: dest, type: 'bind', source, options: ['rbind', 'rprivate', readonlyRootfs ? 'ro' : 'rw'] });
  }
  const kept = defaults.filter((m) => !taken.has(m.destination));
  // Parents before children, whatever order the kubelet sent.
  const depth = (p: string) => p.split('/').filter(Boolean).length;
  const sortedUser = user
    .map((m, i) => ({ m, i }))
    .sort((a, b) => depth(a.m.destination) - depth(b.m.destination) || a.i - b.i)
    .map((x) => x.m);
  return [...kept, ...sortedUser];
}

function cleanPath(p: string): string {
  const parts = p.split('/').filter((x) => x && x !== '.');
  return '/' + parts.join('/');
}

/** The host path of a Localhost seccomp profile the config asks for, if any. */
export function seccompProfilePath(config: ContainerConfig): string | undefined {
  const sc = sec(config);
  if (!sc || sc.privileged) return undefined;
  if (sc.seccomp?.profileType === SecurityProfile_ProfileType.Localhost) {
    if (!sc.seccomp.localhostRef) throw invalidArgument('linux.security_context.seccomp.localhost_ref', 'a Localhost profile needs a path');
    return sc.seccomp.localhostRef;
  }
  if (!sc.seccomp && sc.seccompProfilePath.startsWith('localhost/')) return sc.seccompProfilePath.slice('localhost/'.length);
  return undefined;
}

/** RuntimeDefault asked for (a present `seccomp` with type 0, or the deprecated runtime/default path). */
export function wantsRuntimeDefaultSeccomp(config: ContainerConfig): boolean {
  const sc = sec(config);
  if (!sc) return false;
  if (sc.seccomp) return sc.seccomp.profileType === SecurityProfile_ProfileType.RuntimeDefault;
  return sc.seccompProfilePath === 'runtime/default' || sc.seccompProfilePath === 'docker/default';
}
