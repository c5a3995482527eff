// NRI's LinuxResources beside the CRI's and the OCI spec's: empty values, copies, and the
// conversions containerd makes (CRI -> NRI for what a pod or UpdateContainerResources asks; NRI ->
// CRI for an update a plugin asks for; OCI -> NRI for a container's present limits).
import type { LinuxContainerResources } from '../../../proto/gen/runtime/v1/api.ts';
import type { LinuxCPU, LinuxMemory, LinuxResources } from '../../../proto/gen/nri/v1alpha1/api.ts';
import type { OciResources } from '../oci/spec.ts';

function emptyMemory(): LinuxMemory {
  return {
    limit: undefined,
    reservation: undefined,
    swap: undefined,
    kernel: undefined,
    kernelTcp: undefined,
    swappiness: undefined,
    disableOomKiller: undefined,
    useHierarchy: undefined,
  };
}

function emptyCpu(): LinuxCPU {
  return { shares: undefined, quota: undefined, period: undefined, realtimeRuntime: undefined, realtimePeriod: undefined, cpus: '', mems: '' };
}

export function emptyResources(): LinuxResources {
  return {
    memory: emptyMemory(),
    cpu: emptyCpu(),
    hugepageLimits: [],
    blockioClass: undefined,
    rdtClass: undefined,
    unified: {},
    devices: [],
    pids: undefined,
  };
}

/** A deep copy (with memory and cpu always present), so merging never aliases what a plugin sent. */
export function copyResources(r: LinuxResources | undefined): LinuxResources {
  if (!r) return emptyResources();
  const opt = <T extends object>(v: T | undefined) => (v ? { ...v } : undefined);
  const memory = emptyMemory();
  for (const [k, v] of Object.entries(r.memory ?? {})) (memory as unknown as Record<string, unknown>)[k] = opt(v as object | undefined);
  const cpu = emptyCpu();
  for (const [k, v] of Object.entries(r.cpu ?? {})) (cpu as unknown as Record<string, unknown>)[k] = typeof v === 'string' ? v : opt(v as object | undefined);
  return {
    memory,
    cpu,
    hugepageLimits: r.hugepageLimits.map((h) => ({ ...h })),
    blockioClass: opt(r.blockioClass),
    rdtClass: opt(r.rdtClass),
    unified: { ...r.unified },
    devices: r.devices.map((d) => ({ ...d, major: opt(d.major), minor: opt(d.minor) })),
    pids: opt(r.pids),
  };
}

/** What the CRI asks for, as containerd hands it to plugins (every CPU field and the memory limit set). */
export function fromCriResources(c: LinuxContainerResources | undefined): LinuxResources | undefined {
  if (!c) return undefined;
  const r = emptyResources();
  r.cpu = {
    ...emptyCpu(),
    shares: { value: c.cpuShares },
    quota: { value: c.cpuQuota },
    period: { value: c.cpuPeriod },
    cpus: c.cpusetCpus,
    mems: c.cpusetMems,
  };
  r.memory = { ...emptyMemory(), limit: { value: c.memoryLimitInBytes } };
  r.hugepageLimits = c.hugepageLimits.map((h) => ({ pageSize: h.pageSize, limit: h.limit }));
  r.unified = { ...c.unified };
  return r;
}

/** A plugin's resources as an UpdateContainerResources request (fields left unset are zero, as containerd sends them). */
export function toCriResources(r: LinuxResources, oomScoreAdj = 0n): LinuxContainerResources {
  return {
    cpuPeriod: BigInt(r.cpu?.period?.value ?? 0n),
    cpuQuota: r.cpu?.quota?.value ?? 0n,
    cpuShares: BigInt(r.cpu?.shares?.value ?? 0n),
    memoryLimitInBytes: r.memory?.limit?.value ?? 0n,
    oomScoreAdj,
    cpusetCpus: r.cpu?.cpus ?? '',
    cpusetMems: r.cpu?.mems ?? '',
    hugepageLimits: r.hugepageLimits.map((h) => ({ pageSize: h.pageSize, limit: h.limit })),
    unified: { ...r.unified },
    memorySwapLimitInBytes: r.memory?.swap?.value ?? 0n,
  };
}

const big = (v: number | bigint | undefined) => (v === undefined ? undefined : { value: BigInt(v) });

/** A container's limits from its OCI spec. */
export function fromOciResources(o: OciResources | undefined): LinuxResources | undefined {
  if (!o) return undefined;
  const r = emptyResources();
  if (o.memory) {
    r.memory!.limit = big(o.memory.limit);
    r.memory!.swap = big(o.memory.swap);
    r.memory!.reservation = big(o.memory.reservation);
    r.memory!.swappiness = big(o.memory.swappiness);
    if (o.memory.disableOOMKiller !== undefined) r.memory!.disableOomKiller = { value: o.memory.disableOOMKiller };
  }
  if (o.cpu) {
    r.cpu!.shares = big(o.cpu.shares);
    r.cpu!.quota = big(o.cpu.quota);
    r.cpu!.period = big(o.cpu.period);
    r.cpu!.realtimeRuntime = big(o.cpu.realtimeRuntime);
    r.cpu!.realtimePeriod = big(o.cpu.realtimePeriod);
    r.cpu!.cpus = o.cpu.cpus ?? '';
    r.cpu!.mems = o.cpu.mems ?? '';
  }
  r.hugepageLimits = (o.hugepageLimits ?? []).map((h) => ({ pageSize: h.pageSize, limit: BigInt(h.limit) }));
  r.unified = { ...o.unified };
  r.devices = (o.devices ?? []).map((d) => ({ allow: d.allow, type: d.type ?? '', major: big(d.major), minor: big(d.minor), access: d.access ?? '' }));
  if (o.pids) r.pids = { limit: BigInt(o.pids.limit) };
  return r;
}
