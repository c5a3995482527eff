// PodSandboxStatus: one pod's state, IPs and namespace modes; `verbose` adds `info.info`, a JSON object
// with its namespace paths, PID-namespace init, cgroup parent, files and CNI result.
import type { PodSandboxStatusRequest, PodSandboxStatusResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { requirePods, toPodSandboxStatus } from '../../pods/cri.ts';
import { nowNs } from '../../pods/manager.ts';
import type { UnaryRpc } from '../rpc.ts';

export const podSandboxStatus: UnaryRpc<PodSandboxStatusRequest, PodSandboxStatusResponse> = async (ctx, request) => {
  const pods = requirePods(ctx);
  const pod = await pods.inspect(request.podSandboxId);
  return {
    status: toPodSandboxStatus(pod),
    info: request.verbose ? pods.verboseInfo(pod) : {},
    containersStatuses: [],
    timestamp: nowNs(),
  };
};
