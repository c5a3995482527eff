// Which containers the kernel's OOM killer struck, read from the kernel log (/dev/kmsg), as cAdvisor
// reads it for the kubelet. conmon records an OOM kill only while it can still read the container's
// memory.events; under the systemd driver systemd removes a scope's cgroup as soon as its last process
// is gone, and conmon 2.1 (Debian 12's) can lose that race, so a container the OOM killer ended would be
// reported as an Error. The kernel logs every kill with the victim's cgroup ("oom-kill:...,task_memcg=
// PATH,task=...") before it sends the signal, so by the time conmon writes the exit file the record is
// there: reading the log then, without waiting, gives the same answer however the race went.
import { closeSync, constants, openSync, readSync } from 'node:fs';

/** skiffd names container cgroups skiffd-<id> (cgroupfs) or skiffd-<id>.scope (systemd). */
const CONTAINER_CGROUP = /\/skiffd-([0-9a-f]{64})(?:\.scope)?(?=\/|$)/;
/** A record is at most this long (the kernel's own bound, PRINTK_MESSAGE_MAX, is 2 KiB). */
const RECORD_MAX = 8192;
/** Containers remembered at most: kills of removed containers are forgotten first. */
const REMEMBERED = 4096;
/**
 * Cgroups remembered per container id. Anyone can name a cgroup skiffd-<id> elsewhere (a user's own
 * systemd scope) and have it OOM-killed for real, so each is kept apart and only the container's own
 * path counts; a flood of such cgroups pushes out the oldest.
 */
const PATHS_PER_ID = 16;

/** A node list as the kernel prints a nodemask (%*pbl: "0", "0-3,5"), or "(null)". */
const NODES = String.raw`(?:\(null\)|[0-9,-]*)`;
/**
 * The OOM killer's one-line summary (mm/oom_kill.c, Linux 4.19 and later), the whole message:
 * "oom-kill:constraint=C,nodemask=N[,cpuset=NAME,mems_allowed=N](,oom_memcg=PATH|,global_oom),
 * task_memcg=PATH,task=COMM,pid=N,uid=N". Anchored at both ends, because other kernel records quote
 * text a container chooses (an AppArmor denial quotes the path it refused). A cpuset name is the root's
 * "/" or has no "/" at all. COMM is at most 15 bytes, each at most 4 characters once /dev/kmsg escapes
 * it, so it cannot carry a container id; the shortest task_memcg that fits is taken, at worst the real
 * path cut inside a name the victim's container chose below its own cgroup.
 */
const OOM_SUMMARY = new RegExp(
  String.raw`^oom-kill:constraint=CONSTRAINT_[A-Z_]+,nodemask=${NODES}(?:,cpuset=(?:/|[^/]*),mems_allowed=${NODES})?(?:,oom_memcg=/.*|,global_oom),task_memcg=(/.*?),task=.{0,60},pid=\d+,uid=\d+$`,
);

/**
 * The container an OOM-kill record of the kernel log names as its victim's cgroup, if any, and that
 * cgroup's path up to the container's own (skiffd-<id>[.scope]). A record is "PRIORITY,SEQUENCE,
 * TIMESTAMP,FLAGS;MESSAGE" and continuation lines. Only the kernel's own records count: PRIORITY is
 * facility << 3 | level, and the kernel gives any record written to /dev/kmsg from user space a
 * facility other than 0 (LOG_KERN), so a process cannot forge a kill there; and of the kernel's
 * records only the OOM killer's summary, whose victim cgroup path a container cannot choose above its
 * own cgroup. The name alone proves nothing (any local user can make a cgroup of that name): the path
 * must be the container's, see OomKills.struck.
 */
export function oomKill(record: string): { id: string; cgroup: string } | undefined {
  const priority = Number.parseInt(record, 10);
  const semicolon = record.indexOf(';');
  if (!Number.isInteger(priority) || priority >> 3 !== 0 || semicolon < 0) return undefined;
  const message = record.slice(semicolon + 1).split('\n', 1)[0];
  // A cgroup below a container's may be named by the container, ",task_memcg=..." included: a summary
  // that says task_memcg more than once cannot be read with certainty.
  if (message.indexOf(',task_memcg=') !== message.lastIndexOf(',task_memcg=')) return undefined;
  const path = OOM_SUMMARY.exec(message)?.[1];
  const m = path === undefined ? null : CONTAINER_CGROUP.exec(path);
  // Cut at the first container component: below it the container names cgroups as it likes.
  return m ? { id: m[1], cgroup: path!.slice(0, m.index + m[0].length) } : undefined;
}

/** The container id an OOM-kill record names, whatever cgroup path it is under (see oomKill). */
export function oomKilledContainer(record: string): string | undefined {
  return oomKill(record)?.id;
}

export class OomKills {
  private fd: number | undefined;
  /** Per container id, the cgroups (up to the container's own) the OOM killer struck, newest last. */
  private readonly struckIds = new Map<string, string[]>();
  private readonly buffer = Buffer.alloc(RECORD_MAX);

  constructor(private readonly path = '/dev/kmsg') {}

  /** Opens the log and reads what it holds (kills from before a restart of skiffd are in it). False when it cannot be read. */
  open(): boolean {
    try {
      this.fd = openSync(this.path, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch {
      return false;
    }
    this.drain();
    return true;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  /**
   * True when the kernel log says the OOM killer killed a process in this container's cgroup:
   * `cgroupPath` (the record's cgroupsPath, its path from the hierarchy's root as the kernel prints it)
   * or one below it. A cgroup of the same name elsewhere (`/user.slice/.../skiffd-<id>.scope`) does not count.
   */
  struck(id: string, cgroupPath: string): boolean {
    this.drain();
    const p = cgroupPath.replace(/\/+$/, '');
    if (!p.startsWith('/')) return false;
    return (this.struckIds.get(id) ?? []).some((path) => path === p || path.startsWith(`${p}/`));
  }

  forget(id: string): void {
    this.struckIds.delete(id);
  }

  /** Reads every record written since the last read; never waits (the log is open non-blocking). */
  private drain(): void {
    if (this.fd === undefined) return;
    for (;;) {
      let n: number;
      try {
        n = readSync(this.fd, this.buffer, 0, RECORD_MAX, null);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN') return;
        // Records were overwritten before they were read: the next read goes on from the oldest left.
        if (code === 'EPIPE') continue;
        this.close();
        return;
      }
      if (n <= 0) return;
      this.take(this.buffer.toString('utf8', 0, n));
    }
  }

  private take(record: string): void {
    const kill = oomKill(record);
    if (!kill) return;
    const paths = (this.struckIds.get(kill.id) ?? []).filter((p) => p !== kill.cgroup);
    paths.push(kill.cgroup);
    if (paths.length > PATHS_PER_ID) paths.shift();
    this.struckIds.delete(kill.id);
    this.struckIds.set(kill.id, paths);
    if (this.struckIds.size > REMEMBERED) this.struckIds.delete(this.struckIds.keys().next().value!);
  }
}
