// A container's user namespace is its pod's: the pod's own (mode POD, with the pod's mappings), or the
// host's. A container cannot ask for another one, since it shares the pod's other namespaces, which
// belong to the pod's user namespace.
import { NamespaceMode, type NamespaceOption, type UserNamespace } from '../../../proto/gen/runtime/v1/api.ts';
import { planUserNamespace, sameMappings, UserNamespaceRequestError, type UserNamespaceMappings } from '../pods/userns.ts';
import { invalidArgument, ServerError, Status } from './errors.ts';

const FIELD = 'linux.security_context.namespace_options.userns_options';

function describe(m: UserNamespaceMappings): string {
  return `uids ${m.uids.containerId}:${m.uids.hostId}:${m.uids.length}, gids ${m.gids.containerId}:${m.gids.hostId}:${m.gids.length}`;
}

/**
 * Checks the container's user namespace options against its pod's user namespace and returns the
 * mappings the container runs with (undefined: the host's user namespace).
 */
export function containerUserNamespace(options: UserNamespace | undefined, pod: UserNamespaceMappings | undefined): UserNamespaceMappings | undefined {
  if (!options) return pod;
  if (options.mode === NamespaceMode.CONTAINER || options.mode === NamespaceMode.TARGET) {
    throw invalidArgument(`${FIELD}.mode`, `${NamespaceMode[options.mode]} is not supported for user namespaces (POD or NODE)`);
  }
  if (options.mode === NamespaceMode.NODE) {
    if (pod) throw invalidArgument(`${FIELD}.mode`, "NODE, but the pod has its own user namespace; a container shares its pod's");
    return undefined;
  }
  if (options.mode !== NamespaceMode.POD) throw invalidArgument(`${FIELD}.mode`, `unknown namespace mode ${options.mode}`);
  // POD without mappings means "the pod's", whichever it is.
  if (options.uids.length === 0 && options.gids.length === 0) return pod;
  let asked: UserNamespaceMappings | undefined;
  try {
    asked = planUserNamespace(options, FIELD);
  } catch (err) {
    if (err instanceof UserNamespaceRequestError) throw new ServerError(Status.INVALID_ARGUMENT, err.message);
    throw err;
  }
  if (!pod) throw invalidArgument(FIELD, 'ID mappings given, but the pod was created without a user namespace of its own');
  if (!sameMappings(asked, pod)) {
    throw invalidArgument(FIELD, `the mappings (${describe(asked!)}) differ from the pod's (${describe(pod)}); a container shares its pod's user namespace`);
  }
  return pod;
}

/** The process's IDs must exist in the pod's user namespace, or the runtime fails to switch to them. */
export function refuseUnmappedUser(user: { uid: number; gid: number; additionalGids: number[] }, mappings: UserNamespaceMappings): void {
  const inRange = (id: number, r: UserNamespaceMappings['uids']) => id >= r.containerId && id < r.containerId + r.length;
  const last = (r: UserNamespaceMappings['uids']) => r.containerId + r.length - 1;
  if (!inRange(user.uid, mappings.uids)) {
    throw invalidArgument('linux.security_context.run_as_user', `user ${user.uid} is not mapped in the pod's user namespace (uids 0..${last(mappings.uids)})`);
  }
  for (const gid of [user.gid, ...user.additionalGids]) {
    if (!inRange(gid, mappings.gids)) {
      throw invalidArgument('linux.security_context', `group ${gid} is not mapped in the pod's user namespace (gids 0..${last(mappings.gids)})`);
    }
  }
}

/** In a user namespace of its own, a container cannot use the host's other namespaces. */
export function refuseNodeNamespaces(options: NamespaceOption | undefined): void {
  for (const kind of ['network', 'ipc', 'pid'] as const) {
    if (options?.[kind] === NamespaceMode.NODE) {
      throw invalidArgument(
        `linux.security_context.namespace_options.${kind}`,
        "NODE, but the pod has its own user namespace; the node's namespaces cannot be joined from it",
      );
    }
  }
}
