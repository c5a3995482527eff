// PodSandboxStatus: one pod's state, IPs and namespace modes; `verbose` adds `info.info`, a JSON object
// with its namespace paths, PID-namespace init, cgroup parent, files and CNI result. The statuses of
// its containers come along, as kubelet's evented PLEG expects.
import type { PodSandboxStatusRequest, PodSandboxStatusResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { toContainerStatus } from '../../containers/cri.ts';
import { toPodSandboxStatus } from '../../pods/cri.ts';
import { nowNs } from '../../util/clock.ts';
import type { UnaryRpc } from '../rpc.ts';

export const podSandboxStatus: UnaryRpc<PodSandboxStatusRequest, PodSandboxStatusResponse> = async (ctx, request) => {
  const pods = ctx.pods;
  const pod = await pods.inspect(request.podSandboxId);
  return {
    status: toPodSandboxStatus(pod),
    info: request.verbose ? pods.verboseInfo(pod) : {},
    containersStatuses: (await ctx.containers.listInPod(pod.id)).map(toContainerStatus),
    timestamp: nowNs(),
  };
};
