// RemovePodSandbox: stops the pod if needed, removes its containers, namespaces, files and record.
// Removing a pod that does not exist succeeds, as the API requires. Node plugins (NRI) are told
// once it is gone.
import type { RemovePodSandboxRequest, RemovePodSandboxResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const removePodSandbox: UnaryRpc<RemovePodSandboxRequest, RemovePodSandboxResponse> = async (ctx, request) => {
  const pod = request.podSandboxId ? ctx.pods.resolve(request.podSandboxId) : undefined;
  await ctx.pods.remove(request.podSandboxId);
  if (pod) await ctx.nri.removePodSandbox(pod);
  return {};
};
