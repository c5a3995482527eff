// UpdateRuntimeConfig: the kubelet hands over the node's pod CIDR(s). We validate and record it
// (in memory and atomically under the state dir) for pod networking; an empty CIDR changes nothing.
import { isIP } from 'node:net';
import { join } from 'node:path';
import { ServerError, Status } from 'nice-grpc-common';
import type { UpdateRuntimeConfigRequest, UpdateRuntimeConfigResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { STATE_ENTRIES } from '../../state-dir.ts';
import { writeJsonAtomic } from '../../util/atomic-file.ts';

export const RUNTIME_CONFIG_FILE = STATE_ENTRIES.runtimeConfig;

/** A pod CIDR as the kubelet sends it: one CIDR, or an IPv4 and an IPv6 one separated by a comma. */
export function validPodCidr(value: string): boolean {
  return value.split(',').every((cidr) => {
    const [ip, prefix, extra] = cidr.trim().split('/');
    const family = isIP(ip ?? '');
    const bits = Number(prefix);
    return extra === undefined && family !== 0 && /^\d+$/.test(prefix ?? '') && bits <= (family === 4 ? 32 : 128);
  });
}

export const updateRuntimeConfig: UnaryRpc<UpdateRuntimeConfigRequest, UpdateRuntimeConfigResponse> = async (ctx, request) => {
  const podCidr = request.runtimeConfig?.networkConfig?.podCidr ?? '';
  if (podCidr === '' || podCidr === ctx.network.podCidr) return {};
  if (!validPodCidr(podCidr)) {
    throw new ServerError(Status.INVALID_ARGUMENT, `runtime_config.network_config.pod_cidr "${podCidr}" is not a CIDR (e.g. 10.88.0.0/16, or IPv4,IPv6 pair)`);
  }
  await writeJsonAtomic(join(ctx.config.state, RUNTIME_CONFIG_FILE), { podCidr });
  ctx.network.podCidr = podCidr;
  ctx.log.info('pod CIDR updated', { pod_cidr: podCidr });
  return {};
};
