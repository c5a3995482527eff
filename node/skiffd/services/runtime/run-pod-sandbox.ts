// RunPodSandbox: pinned namespaces, the CNI network, the /etc files and (for a shared PID namespace)
// catatonit; the pod is READY when this returns. See node/skiffd/pods/run.ts.
import type { RunPodSandboxRequest, RunPodSandboxResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const runPodSandbox: UnaryRpc<RunPodSandboxRequest, RunPodSandboxResponse> = async (ctx, request) => ({
  podSandboxId: await ctx.pods.run(request),
});
