// Checks a RunPodSandbox request and turns it into the plain facts the pod is built from. Anything
// wrong is INVALID_ARGUMENT naming the field, before a single namespace or address is allocated.
import { isIP } from 'node:net';
import { hostname as nodeHostname } from 'node:os';
import { ServerError, Status } from 'nice-grpc-common';
import { NamespaceMode, Protocol, type PodSandboxConfig, type RunPodSandboxRequest } from '../../../proto/gen/runtime/v1/api.ts';
import type { CniPortMapping } from '../network/cni.ts';
import type { DnsSettings } from './files.ts';
import type { NamespaceModeName, PodSandboxMetadataRecord } from './types.ts';
import { planUserNamespace, UserNamespaceRequestError, type UserNamespaceMappings } from './userns.ts';

export interface PodPlan {
  config: PodSandboxConfig;
  metadata: PodSandboxMetadataRecord;
  hostname: string;
  networkMode: NamespaceModeName;
  ipcMode: NamespaceModeName;
  pidMode: NamespaceModeName;
  /** The pod's own user namespace (mode POD); absent: the host's. */
  userNamespace?: UserNamespaceMappings;
  /** Applied in the pod's namespaces, in the order given. */
  sysctls: [string, string][];
  portMappings: CniPortMapping[];
  dns: DnsSettings | undefined;
  /** The client's cgroup parent ('' = none given). */
  cgroupParent: string;
  runtimeHandler: string;
}

function invalid(message: string): never {
  throw new ServerError(Status.INVALID_ARGUMENT, message);
}

export function modeName(mode: NamespaceMode | undefined): NamespaceModeName {
  switch (mode ?? NamespaceMode.POD) {
    case NamespaceMode.POD:
      return 'POD';
    case NamespaceMode.CONTAINER:
      return 'CONTAINER';
    case NamespaceMode.NODE:
      return 'NODE';
    case NamespaceMode.TARGET:
      return 'TARGET';
    default:
      return invalid(`unknown namespace mode ${mode}`);
  }
}

// RFC 1123 labels; the kernel caps a hostname at 64 bytes.
const HOSTNAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/i;
const SYSCTL_KEY = /^[a-zA-Z0-9_]+([./][a-zA-Z0-9_\-+:@]+)*$/;
// Sysctls that belong to the IPC namespace (everything else outside net.* is node-wide).
const IPC_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'kernel.shmmax',
  'kernel.shmall',
  'kernel.shmmni',
  'kernel.msgmax',
  'kernel.msgmnb',
  'kernel.msgmni',
  'kernel.sem',
]);

function sysctlNamespace(key: string): 'net' | 'ipc' | undefined {
  const dotted = key.replaceAll('/', '.');
  if (dotted.startsWith('net.')) return 'net';
  if (IPC_SYSCTLS.has(dotted) || dotted.startsWith('fs.mqueue.')) return 'ipc';
  return undefined;
}

const PROTOCOLS: Record<number, CniPortMapping['protocol']> = { [Protocol.TCP]: 'tcp', [Protocol.UDP]: 'udp', [Protocol.SCTP]: 'sctp' };

export function planPod(request: RunPodSandboxRequest, knownHandlers: readonly string[]): PodPlan {
  const config = request.config;
  if (!config) invalid('config is required');
  const md = config.metadata;
  if (!md) invalid('config.metadata is required');
  for (const field of ['name', 'uid', 'namespace'] as const) {
    if (!md[field]) invalid(`config.metadata.${field} is required`);
  }
  if (request.runtimeHandler && !knownHandlers.includes(request.runtimeHandler)) {
    invalid(
      `runtime_handler "${request.runtimeHandler}" is not configured on this node (configured: ${knownHandlers.map((h) => `"${h}"`).join(', ') || 'none'}; "" selects the default): add a [runtimes.${request.runtimeHandler}] table, or fix the RuntimeClass's handler`,
    );
  }
  const linux = config.linux;
  const security = linux?.securityContext;
  const ns = security?.namespaceOptions;
  const networkMode = modeName(ns?.network);
  const ipcMode = modeName(ns?.ipc);
  const pidMode = modeName(ns?.pid);
  if (networkMode === 'TARGET' || networkMode === 'CONTAINER')
    invalid(`config.linux.security_context.namespace_options.network: ${networkMode} is not valid for a pod (POD or NODE)`);
  if (ipcMode === 'TARGET' || ipcMode === 'CONTAINER')
    invalid(`config.linux.security_context.namespace_options.ipc: ${ipcMode} is not valid for a pod (POD or NODE)`);
  if (pidMode === 'TARGET') invalid('config.linux.security_context.namespace_options.pid: TARGET is not valid for a pod (POD, CONTAINER or NODE)');
  const usernsField = 'config.linux.security_context.namespace_options.userns_options';
  let userNamespace: UserNamespaceMappings | undefined;
  try {
    userNamespace = planUserNamespace(ns?.usernsOptions, usernsField);
  } catch (err) {
    if (err instanceof UserNamespaceRequestError) invalid(err.message);
    throw err;
  }
  // The pod's namespaces are created inside its user namespace; the host's cannot be shared with it.
  if (userNamespace) {
    for (const [kind, mode] of [
      ['network', networkMode],
      ['ipc', ipcMode],
      ['pid', pidMode],
    ] as const) {
      if (mode === 'NODE')
        invalid(`${usernsField}: a pod with its own user namespace cannot use the node's ${kind} namespace (namespace_options.${kind} is NODE)`);
    }
  }
  if (security?.runAsGroup && !security.runAsUser) invalid('config.linux.security_context.run_as_group is set without run_as_user');

  // An empty hostname means the node's, as in containerd and CRI-O; only one the client chose is checked.
  const hostname = config.hostname || nodeHostname();
  if (config.hostname && networkMode !== 'NODE' && (hostname.length > 64 || !HOSTNAME.test(hostname))) {
    invalid(`config.hostname "${hostname}" is not a valid hostname (RFC 1123, at most 64 characters)`);
  }

  const sysctls: [string, string][] = [];
  for (const [key, value] of Object.entries(linux?.sysctls ?? {})) {
    if (!SYSCTL_KEY.test(key) || key.includes('..')) invalid(`config.linux.sysctls: "${key}" is not a sysctl name`);
    const where = sysctlNamespace(key);
    if (!where) invalid(`config.linux.sysctls: "${key}" is not namespaced (only net.*, fs.mqueue.* and the kernel IPC sysctls can be set per pod)`);
    if (where === 'net' && networkMode === 'NODE') invalid(`config.linux.sysctls: "${key}" cannot be set for a pod on the node network`);
    if (where === 'ipc' && ipcMode === 'NODE') invalid(`config.linux.sysctls: "${key}" cannot be set for a pod on the node IPC namespace`);
    if (/[\n\0]/.test(value)) invalid(`config.linux.sysctls: the value of "${key}" contains a newline or NUL`);
    sysctls.push([key, value]);
  }

  const portMappings: CniPortMapping[] = [];
  config.portMappings.forEach((pm, i) => {
    const field = `config.port_mappings[${i}]`;
    if (pm.hostPort === 0) return; // 0 means: no host port
    if (pm.hostPort < 1 || pm.hostPort > 65535) invalid(`${field}.host_port ${pm.hostPort} is out of range 1-65535`);
    if (pm.containerPort < 1 || pm.containerPort > 65535) invalid(`${field}.container_port ${pm.containerPort} is out of range 1-65535`);
    const protocol = PROTOCOLS[pm.protocol];
    if (!protocol) invalid(`${field}.protocol ${pm.protocol} is unknown (TCP, UDP or SCTP)`);
    if (pm.hostIp && !isIP(pm.hostIp)) invalid(`${field}.host_ip "${pm.hostIp}" is not an IP address`);
    portMappings.push({ hostPort: pm.hostPort, containerPort: pm.containerPort, protocol, ...(pm.hostIp ? { hostIP: pm.hostIp } : {}) });
  });

  let dns: DnsSettings | undefined;
  if (config.dnsConfig) {
    const { servers, searches, options } = config.dnsConfig;
    servers.forEach((s, i) => {
      if (!isIP(s)) invalid(`config.dns_config.servers[${i}] "${s}" is not an IP address`);
    });
    for (const [name, list] of [
      ['searches', searches],
      ['options', options],
    ] as const) {
      list.forEach((v, i) => {
        if (!v || /\s/.test(v)) invalid(`config.dns_config.${name}[${i}] "${v}" must be one non-empty word`);
      });
    }
    dns = { servers, searches, options };
  }

  return {
    config,
    metadata: { name: md.name, uid: md.uid, namespace: md.namespace, attempt: md.attempt },
    hostname,
    networkMode,
    ipcMode,
    pidMode,
    ...(userNamespace ? { userNamespace } : {}),
    sysctls,
    portMappings,
    dns,
    cgroupParent: linux?.cgroupParent ?? '',
    runtimeHandler: request.runtimeHandler,
  };
}
