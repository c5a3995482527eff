// CDI (Container Device Interface) for skiffd: which devices a container asks for (the CRI's
// CDI_devices field, or the older cdi.k8s.io/* annotations a device plugin or DRA driver leaves), found
// in the node's spec files and applied to its OCI spec. Errors name the device and the spec file.
import type { ContainerConfig } from '../../../proto/gen/runtime/v1/api.ts';
import { failedPrecondition, invalidArgument } from '../containers/errors.ts';
import { applyCdiDevices, CdiApplyError, type CdiEditableSpec } from './apply.ts';
import type { CdiRegistry, FoundDevice } from './registry.ts';
import { parseQualifiedName } from './spec.ts';

export { CdiRegistry } from './registry.ts';

/** The annotation prefix under which the older request form names devices (comma-separated). */
export const CDI_ANNOTATION_PREFIX = 'cdi.k8s.io/';

export interface CdiPolicy {
  enabled: boolean;
  registry: CdiRegistry;
}

/** The qualified device names a container asks for, in order, each once: the field first, then annotations. */
export function requestedDevices(config: ContainerConfig): { name: string; field: string }[] {
  const out: { name: string; field: string }[] = [];
  const seen = new Set<string>();
  const add = (name: string, field: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    out.push({ name, field });
  };
  for (const [i, d] of config.CDIDevices.entries()) add(d.name, `config.CDI_devices[${i}].name`);
  for (const [key, value] of Object.entries(config.annotations).sort(([a], [b]) => a.localeCompare(b))) {
    if (!key.startsWith(CDI_ANNOTATION_PREFIX)) continue;
    for (const name of value.split(',').map((n) => n.trim())) if (name) add(name, `config.annotations["${key}"]`);
  }
  return out;
}

/** Finds every device the container asks for; throws a gRPC error naming the device, and the file where one is at fault. */
export function resolveDevices(config: ContainerConfig, policy: CdiPolicy): FoundDevice[] {
  const wanted = requestedDevices(config);
  if (wanted.length === 0) return [];
  if (!policy.enabled) {
    throw failedPrecondition(`${wanted[0].field}: the container asks for the CDI device ${wanted[0].name}, and CDI is off on this node ([cdi] enable = false)`);
  }
  for (const w of wanted) {
    const parsed = parseQualifiedName(w.name);
    if (typeof parsed === 'string') throw invalidArgument(w.field, parsed);
  }
  const { devices, errors, ambiguous } = policy.registry.refresh();
  return wanted.map((w) => {
    const twice = ambiguous.get(w.name);
    if (twice) throw failedPrecondition(`${w.field}: the CDI device ${w.name} is defined in both ${twice.join(' and ')}: remove one`);
    const found = devices.get(w.name);
    if (found) return found;
    const kind = w.name.slice(0, w.name.indexOf('='));
    const broken = [...errors.values()];
    const dirs = policy.registry.specDirs.join(', ');
    throw failedPrecondition(
      `${w.field}: no CDI spec on this node defines the device ${w.name} (${kind} devices are looked for in ${dirs})` +
        (broken.length > 0 ? `; spec files that could not be read: ${broken.join('; ')}` : ''),
    );
  });
}

/** Applies found devices to the spec, turning a conflict into FAILED_PRECONDITION. */
export function applyDevices(spec: CdiEditableSpec, devices: readonly FoundDevice[]): void {
  if (devices.length === 0) return;
  try {
    applyCdiDevices(spec, devices);
  } catch (err) {
    if (err instanceof CdiApplyError) throw failedPrecondition(err.message);
    throw err;
  }
}
