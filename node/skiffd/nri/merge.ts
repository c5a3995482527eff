// Collects what several plugins answer to one event into one result, plugin by plugin in index order.
// Each plugin's answer also changes the container the next plugin is shown (it sees what earlier
// ones added). Two plugins setting the same thing (an annotation, an env variable, a mount or device
// path, a resource field, an rlimit type, ...) of one container is a conflict: the whole event fails
// with containerd's message, `plugins "A" and "B" both tried to set ...`. A plugin may remove what an
// earlier one added (a "-" marked key), which frees it for a later one.
import type {
  ContainerAdjustment,
  ContainerEviction,
  ContainerUpdate,
  CreateContainerRequest,
  CreateContainerResponse,
  LinuxResources,
  StopContainerResponse,
  UpdateContainerRequest,
  UpdateContainerResponse,
} from '../../../proto/gen/nri/v1alpha1/api.ts';
import { emptyResources, copyResources } from './resources.ts';

export class ConflictError extends Error {
  override name = 'ConflictError';
}

/** "-key" marks key for removal. */
export function markedForRemoval(key: string): { key: string; marked: boolean } {
  return key.startsWith('-') ? { key: key.slice(1), marked: true } : { key, marked: false };
}

/** Who set what, per container. */
class Owners {
  private readonly owners = new Map<string, string>();
  claim(id: string, plugin: string, subject: string, qualifier?: string): void {
    const key = `${id}\0${subject}\0${qualifier ?? ''}`;
    const other = this.owners.get(key);
    if (other !== undefined)
      throw new ConflictError(`plugins "${plugin}" and "${other}" both tried to set ${subject}${qualifier !== undefined ? ` ${qualifier}` : ''}`);
    this.owners.set(key, plugin);
  }
  clear(id: string, subject: string, qualifier: string): void {
    this.owners.delete(`${id}\0${subject}\0${qualifier}`);
  }
}

function emptyAdjustment(): ContainerAdjustment {
  return {
    annotations: {},
    mounts: [],
    env: [],
    hooks: { prestart: [], createRuntime: [], createContainer: [], startContainer: [], poststart: [], poststop: [] },
    linux: { devices: [], resources: emptyResources(), cgroupsPath: '', oomScoreAdj: undefined },
    rlimits: [],
    CDIDevices: [],
  };
}

/**
 * Sets every field `from` sets on each of `into`, claiming it for the plugin first. The same fields
 * and subjects as containerd (memory limit, CPU shares, hugepage limit of size X, unified resource K, ...).
 */
function mergeResources(owners: Owners, id: string, plugin: string, from: LinuxResources, into: LinuxResources[]): void {
  const claim = (subject: string, qualifier?: string) => owners.claim(id, plugin, subject, qualifier);
  const mem = from.memory;
  if (mem) {
    const fields = [
      ['limit', 'memory limit'],
      ['reservation', 'memory reservation'],
      ['swap', 'memory swap limit'],
      ['kernel', 'memory kernel limit'],
      ['kernelTcp', 'memory TCP limit'],
      ['swappiness', 'memory swappiness'],
      ['disableOomKiller', 'memory disable OOM killer'],
      ['useHierarchy', "memory 'UseHierarchy'"],
    ] as const;
    for (const [field, subject] of fields) {
      const v = mem[field];
      if (!v) continue;
      claim(subject);
      for (const r of into) (r.memory as unknown as Record<string, unknown>)[field] = { value: v.value };
    }
  }
  const cpu = from.cpu;
  if (cpu) {
    const fields = [
      ['shares', 'CPU shares'],
      ['quota', 'CPU quota'],
      ['period', 'CPU period'],
      ['realtimeRuntime', 'CPU realtime runtime'],
      ['realtimePeriod', 'CPU realtime period'],
    ] as const;
    for (const [field, subject] of fields) {
      const v = cpu[field];
      if (!v) continue;
      claim(subject);
      for (const r of into) (r.cpu as unknown as Record<string, unknown>)[field] = { value: v.value };
    }
    if (cpu.cpus) {
      claim('CPU pinning');
      for (const r of into) r.cpu!.cpus = cpu.cpus;
    }
    if (cpu.mems) {
      claim('memory pinning');
      for (const r of into) r.cpu!.mems = cpu.mems;
    }
  }
  for (const l of from.hugepageLimits) {
    claim('hugepage limit of size', l.pageSize);
    for (const r of into) r.hugepageLimits = [...r.hugepageLimits.filter((h) => h.pageSize !== l.pageSize), { ...l }];
  }
  for (const [k, v] of Object.entries(from.unified)) {
    claim('unified resource', k);
    for (const r of into) r.unified[k] = v;
  }
  if (from.blockioClass) {
    claim('block I/O class');
    for (const r of into) r.blockioClass = { value: from.blockioClass.value };
  }
  if (from.rdtClass) {
    claim('RDT class');
    for (const r of into) r.rdtClass = { value: from.rdtClass.value };
  }
  if (from.pids) {
    claim('pids pinning');
    for (const r of into) r.pids = { limit: from.pids.limit };
  }
}

/** Updates to other containers (and for UpdateContainer, the one being updated), merged across plugins. */
class Updates {
  readonly list: ContainerUpdate[] = [];
  readonly byId = new Map<string, ContainerUpdate>();
  constructor(
    private readonly owners: Owners,
    /** The container being created: plugins may not update it. */
    private readonly creating?: string,
    /** The container being updated, with the resources asked for. */
    private readonly updating?: UpdateContainerRequest,
  ) {}

  apply(updates: ContainerUpdate[], plugin: string): void {
    for (const u of updates) {
      const id = u.containerId;
      if (id === this.creating) throw new ConflictError(`plugin "${plugin}" asked update of "${id}" during creation`);
      let merged = this.byId.get(id);
      if (merged) merged.ignoreFailure = merged.ignoreFailure && u.ignoreFailure;
      else {
        merged = { containerId: id, linux: { resources: emptyResources() }, ignoreFailure: u.ignoreFailure };
        this.byId.set(id, merged);
        if (this.updating?.container?.id !== id) this.list.push(merged);
      }
      const from = u.linux?.resources;
      if (!from) continue;
      const target = this.updating?.container?.id === id ? copyResources(this.updating.linuxResources) : copyResources(merged.linux!.resources);
      try {
        mergeResources(this.owners, id, plugin, from, [target]);
      } catch (err) {
        // A conflict in an update the plugin marked as optional only drops that update.
        if (u.ignoreFailure) continue;
        throw err;
      }
      merged.linux = { resources: copyResources(target) };
      if (this.updating?.container?.id === id) this.updating.linuxResources = copyResources(target);
    }
  }
}

/** CreateContainer: the merged adjustment, the updates to other containers, and the evictions asked for. */
export class CreateResult {
  private readonly owners = new Owners();
  readonly adjust = emptyAdjustment();
  private readonly updates: Updates;
  readonly evict: ContainerEviction[] = [];

  constructor(private readonly request: CreateContainerRequest) {
    const c = request.container!;
    c.hooks ??= { prestart: [], createRuntime: [], createContainer: [], startContainer: [], poststart: [], poststop: [] };
    c.linux ??= { namespaces: [], devices: [], resources: undefined, oomScoreAdj: undefined, cgroupsPath: '' };
    c.linux.resources ??= emptyResources();
    c.linux.resources.memory ??= emptyResources().memory;
    c.linux.resources.cpu ??= emptyResources().cpu;
    this.updates = new Updates(this.owners, c.id);
  }

  apply(reply: CreateContainerResponse | undefined, plugin: string): void {
    if (!reply) return;
    if (reply.adjust) this.adjustWith(reply.adjust, plugin);
    this.updates.apply(reply.update, plugin);
    this.evict.push(...reply.evict);
  }

  get update(): ContainerUpdate[] {
    return this.updates.list;
  }

  private adjustWith(a: ContainerAdjustment, plugin: string): void {
    const c = this.request.container!;
    const id = c.id;
    const out = this.adjust;

    // Annotations: removals first, so a plugin may replace one it (or an earlier plugin) set.
    const entries = Object.entries(a.annotations);
    const removed = new Set(
      entries
        .map(([k]) => markedForRemoval(k))
        .filter((m) => m.marked)
        .map((m) => m.key),
    );
    for (const [k, v] of entries) {
      if (markedForRemoval(k).marked) continue;
      if (removed.has(k)) {
        this.owners.clear(id, 'annotation', k);
        delete c.annotations[k];
        out.annotations[`-${k}`] = '';
        removed.delete(k);
      }
      this.owners.claim(id, plugin, 'annotation', k);
      c.annotations[k] = v;
      out.annotations[k] = v;
    }
    for (const k of removed) {
      this.owners.clear(id, 'annotation', k);
      delete c.annotations[k];
      out.annotations[`-${k}`] = '';
    }

    // Mounts, by destination.
    if (a.mounts.length > 0) {
      const add = a.mounts.filter((m) => !markedForRemoval(m.destination).marked);
      const del = new Map(a.mounts.filter((m) => markedForRemoval(m.destination).marked).map((m) => [markedForRemoval(m.destination).key, m]));
      const modified = new Set(add.map((m) => m.destination));
      out.mounts = out.mounts.filter((m) => {
        if (!del.has(m.destination)) return true;
        this.owners.clear(id, 'mount', m.destination);
        return false;
      });
      c.mounts = c.mounts.filter((m) => !del.has(m.destination) && !modified.has(m.destination));
      for (const m of add) {
        this.owners.claim(id, plugin, 'mount', m.destination);
        out.mounts.push(m);
      }
      for (const [key, m] of del) if (!modified.has(key)) out.mounts.push(m);
      c.mounts.push(...add);
    }

    // Environment, by name.
    if (a.env.length > 0) {
      const add = a.env.filter((e) => !markedForRemoval(e.key).marked);
      const del = new Set(a.env.filter((e) => markedForRemoval(e.key).marked).map((e) => markedForRemoval(e.key).key));
      const modified = new Set(add.map((e) => e.key));
      out.env = out.env.filter((e) => {
        if (!del.has(e.key)) return true;
        this.owners.clear(id, 'env', e.key);
        return false;
      });
      c.env = c.env.filter((e) => {
        const name = e.split('=', 1)[0];
        return !del.has(name) && !modified.has(name);
      });
      for (const e of add) {
        this.owners.claim(id, plugin, 'env', e.key);
        out.env.push(e);
      }
      // Removals travel too: the spec may hold the variable from the image or the CRI config.
      for (const name of del) if (!modified.has(name)) out.env.push({ key: `-${name}`, value: '' });
      c.env.push(...add.map((e) => `${e.key}=${e.value}`));
    }

    // Hooks only accumulate.
    if (a.hooks) {
      for (const kind of ['prestart', 'createRuntime', 'createContainer', 'startContainer', 'poststart', 'poststop'] as const) {
        out.hooks![kind].push(...a.hooks[kind]);
        c.hooks![kind].push(...a.hooks[kind]);
      }
    }

    const linux = a.linux;
    if (linux) {
      if (linux.devices.length > 0) {
        const add = linux.devices.filter((d) => !markedForRemoval(d.path).marked);
        const del = new Set(linux.devices.filter((d) => markedForRemoval(d.path).marked).map((d) => markedForRemoval(d.path).key));
        const modified = new Set(add.map((d) => d.path));
        out.linux!.devices = out.linux!.devices.filter((d) => {
          if (!del.has(d.path)) return true;
          this.owners.clear(id, 'device', d.path);
          return false;
        });
        c.linux!.devices = c.linux!.devices.filter((d) => !del.has(d.path) && !modified.has(d.path));
        for (const d of add) {
          this.owners.claim(id, plugin, 'device', d.path);
          out.linux!.devices.push(d);
        }
        for (const path of del) if (!modified.has(path)) out.linux!.devices.push({ ...emptyDevice(), path: `-${path}` });
        c.linux!.devices.push(...add);
      }
      if (linux.resources) mergeResources(this.owners, id, plugin, linux.resources, [c.linux!.resources!, out.linux!.resources!]);
      if (linux.cgroupsPath) {
        this.owners.claim(id, plugin, 'cgroups path');
        c.linux!.cgroupsPath = linux.cgroupsPath;
        out.linux!.cgroupsPath = linux.cgroupsPath;
      }
      if (linux.oomScoreAdj) {
        this.owners.claim(id, plugin, 'oom score adj');
        c.linux!.oomScoreAdj = { value: linux.oomScoreAdj.value };
        out.linux!.oomScoreAdj = { value: linux.oomScoreAdj.value };
      }
    }

    for (const l of a.rlimits) {
      this.owners.claim(id, plugin, 'rlimit', l.type);
      c.rlimits.push(l);
      out.rlimits.push(l);
    }
    for (const d of a.CDIDevices) {
      this.owners.claim(id, plugin, 'CDI device', d.name);
      out.CDIDevices.push(d);
    }
  }
}

function emptyDevice() {
  return { path: '', type: '', major: 0n, minor: 0n, fileMode: undefined, uid: undefined, gid: undefined };
}

/** UpdateContainer: the resources to apply to the container (last) and updates to others. */
export class UpdateResult {
  private readonly owners = new Owners();
  private readonly updates: Updates;
  readonly evict: ContainerEviction[] = [];

  constructor(private readonly request: UpdateContainerRequest) {
    request.linuxResources ??= emptyResources();
    request.linuxResources.memory ??= emptyResources().memory;
    request.linuxResources.cpu ??= emptyResources().cpu;
    this.updates = new Updates(this.owners, undefined, request);
  }

  apply(reply: UpdateContainerResponse | undefined, plugin: string): void {
    if (!reply) return;
    this.updates.apply(reply.update, plugin);
    this.evict.push(...reply.evict);
  }

  /** Updates of other containers; the requested container's resources as plugins left them. */
  result(): { update: ContainerUpdate[]; resources: LinuxResources } {
    return { update: this.updates.list, resources: copyResources(this.request.linuxResources) };
  }
}

/** StopContainer: updates to the other containers. */
export class StopResult {
  private readonly updates = new Updates(new Owners());

  apply(reply: StopContainerResponse | undefined, plugin: string): void {
    if (reply) this.updates.apply(reply.update, plugin);
  }

  get update(): ContainerUpdate[] {
    return this.updates.list;
  }
}
