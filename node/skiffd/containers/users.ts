// Resolves the user a container runs as from the image's /etc/passwd and /etc/group text.

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

export interface GroupEntry {
  name: string;
  gid: number;
  members: string[];
}

export function parsePasswd(text: string): PasswdEntry[] {
  const out: PasswdEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const f = line.split(':');
    if (f.length < 4) continue;
    const uid = Number(f[2]);
    const gid = Number(f[3]);
    if (!Number.isInteger(uid) || !Number.isInteger(gid)) continue;
    out.push({ name: f[0], uid, gid, home: f[5] ?? '' });
  }
  return out;
}

export function parseGroup(text: string): GroupEntry[] {
  const out: GroupEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const f = line.split(':');
    if (f.length < 3) continue;
    const gid = Number(f[2]);
    if (!Number.isInteger(gid)) continue;
    out.push({ name: f[0], gid, members: (f[3] ?? '').split(',').filter(Boolean) });
  }
  return out;
}

export interface UserRequest {
  /** run_as_user */
  uid?: number;
  /** run_as_username */
  username?: string;
  /** run_as_group */
  gid?: number;
  /** Image config User: "", "uid", "name", "uid:gid", "name:group". */
  imageUser?: string;
  supplementalGroups?: number[];
  /** Strict: only the listed supplemental groups, nothing from /etc/group. */
  strictGroups?: boolean;
}

export interface ResolvedUser {
  uid: number;
  gid: number;
  additionalGids: number[];
  home: string;
  name?: string;
}

export class UserError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

const isNumeric = (s: string) => /^\d+$/.test(s);

export function resolveUser(req: UserRequest, passwdText: string, groupText: string): ResolvedUser {
  const passwd = parsePasswd(passwdText);
  const groups = parseGroup(groupText);
  let entry: PasswdEntry | undefined;
  let uid: number;
  let gid: number | undefined;
  if (req.username) {
    entry = passwd.find((p) => p.name === req.username);
    if (!entry) throw new UserError('linux.security_context.run_as_username', `user "${req.username}" is not in the image's /etc/passwd`);
    uid = entry.uid;
  } else if (req.uid !== undefined) {
    uid = req.uid;
    entry = passwd.find((p) => p.uid === uid);
  } else {
    const [u, g] = (req.imageUser ?? '').split(':', 2);
    if (!u) {
      uid = 0;
      entry = passwd.find((p) => p.uid === 0);
    } else if (isNumeric(u)) {
      uid = Number(u);
      entry = passwd.find((p) => p.uid === uid);
    } else {
      entry = passwd.find((p) => p.name === u);
      if (!entry) throw new UserError('image config User', `user "${u}" is not in the image's /etc/passwd`);
      uid = entry.uid;
    }
    if (g) {
      if (isNumeric(g)) gid = Number(g);
      else {
        const grp = groups.find((x) => x.name === g);
        if (!grp) throw new UserError('image config User', `group "${g}" is not in the image's /etc/group`);
        gid = grp.gid;
      }
    }
  }
  if (req.gid !== undefined) gid = req.gid;
  if (gid === undefined) gid = entry?.gid ?? 0;
  // The primary group leads the list, as containerd does, so `id -G` inside matches the status.
  const extra: number[] = [gid];
  if (!req.strictGroups && entry) {
    for (const g of groups) if (g.members.includes(entry.name)) extra.push(g.gid);
  }
  extra.push(...(req.supplementalGroups ?? []));
  const additionalGids = [...new Set(extra)];
  return { uid, gid, additionalGids, home: entry?.home || '/', name: entry?.name };
}
