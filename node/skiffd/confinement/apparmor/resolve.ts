// Which AppArmor profile a container runs under, from its CRI security context: the `apparmor` field,
// or the deprecated `apparmor_profile` string when the field is absent. As the kubelet and the field's
// runtimes read them: no profile named means the runtime's default (kubernetes#51746), except for a
// privileged container, which the default would break; `localhost/NAME` names a profile already
// loaded on the node.
import { SecurityProfile_ProfileType, type LinuxContainerSecurityContext } from '../../../../proto/gen/runtime/v1/api.ts';
import { failedPrecondition, invalidArgument } from '../../containers/errors.ts';
import type { AppArmorHost } from './host.ts';

const LOCALHOST_PREFIX = 'localhost/';

type Choice = { kind: 'default' } | { kind: 'unconfined' } | { kind: 'localhost'; name: string; field: string };

/** The request's choice, with the field that made it (for messages). */
function requested(sc: LinuxContainerSecurityContext | undefined): Choice | undefined {
  if (sc?.apparmor) {
    const field = 'linux.security_context.apparmor';
    const { profileType, localhostRef } = sc.apparmor;
    if (profileType === SecurityProfile_ProfileType.Localhost) {
      const name = localhostRef.startsWith(LOCALHOST_PREFIX) ? localhostRef.slice(LOCALHOST_PREFIX.length) : localhostRef;
      if (!name) throw invalidArgument(`${field}.localhost_ref`, 'a Localhost profile needs the name of a loaded profile');
      return { kind: 'localhost', name, field: `${field}.localhost_ref` };
    }
    if (localhostRef) throw invalidArgument(`${field}.localhost_ref`, 'set only for a Localhost profile');
    if (profileType === SecurityProfile_ProfileType.Unconfined) return { kind: 'unconfined' };
    if (profileType === SecurityProfile_ProfileType.RuntimeDefault) return { kind: 'default' };
    throw invalidArgument(`${field}.profile_type`, `unknown profile type ${profileType}`);
  }
  const text = sc?.apparmorProfile ?? '';
  const field = 'linux.security_context.apparmor_profile';
  if (text === '') return undefined;
  if (text === 'runtime/default') return { kind: 'default' };
  if (text === 'unconfined') return { kind: 'unconfined' };
  if (text.startsWith(LOCALHOST_PREFIX) && text.length > LOCALHOST_PREFIX.length)
    return { kind: 'localhost', name: text.slice(LOCALHOST_PREFIX.length), field };
  throw invalidArgument(field, `"${text}" is not runtime/default, unconfined or localhost/NAME`);
}

export interface AppArmorPolicy {
  host: AppArmorHost;
  /** The profile for RuntimeDefault and for containers that name none. */
  defaultProfile: string;
}

/** The profile name for the OCI spec's `process.apparmorProfile`, or undefined to run unconfined. */
export function containerAppArmorProfile(sc: LinuxContainerSecurityContext | undefined, policy: AppArmorPolicy): string | undefined {
  const choice = requested(sc);
  const privileged = sc?.privileged ?? false;
  if (!policy.host.enabled) {
    // Asked for confinement this node cannot give: say so rather than run the container unconfined.
    if (choice && choice.kind !== 'unconfined')
      throw failedPrecondition(
        `AppArmor is not enabled on this node (/sys/module/apparmor/parameters/enabled), so the container cannot run under ${choice.kind === 'localhost' ? `the profile "${choice.name}"` : 'the runtime default profile'}: ask for Unconfined, or schedule the pod on a node with AppArmor`,
      );
    return undefined;
  }
  if (!choice) return privileged ? undefined : policy.defaultProfile;
  if (choice.kind === 'unconfined') return undefined;
  if (choice.kind === 'default') return privileged ? undefined : policy.defaultProfile;
  if (!policy.host.loaded(choice.name))
    throw failedPrecondition(
      `${choice.field}: the AppArmor profile "${choice.name}" is not loaded on this node: load it first (apparmor_parser -r FILE), or ask for RuntimeDefault or Unconfined`,
    );
  return choice.name;
}
