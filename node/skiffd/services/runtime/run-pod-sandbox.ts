// RunPodSandbox: pinned namespaces, the CNI network, the /etc files and (for a shared PID namespace)
// catatonit; the pod is READY when this returns. See node/skiffd/pods/run.ts. Node plugins (NRI) are
// told once it is ready; one that refuses it fails the call, and the pod goes again. From then until
// the call is done no plugin is synchronized (as containerd holds it off), so that none misses the
// pod; a network that is slow to come up does not hold plugins off.
import type { RunPodSandboxRequest, RunPodSandboxResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const runPodSandbox: UnaryRpc<RunPodSandboxRequest, RunPodSandboxResponse> = async (ctx, request) => {
  const podSandboxId = await ctx.pods.run(request);
  const release = await ctx.nri.blockSync();
  try {
    await ctx.nri.runPodSandbox(podSandboxId);
  } catch (err) {
    const pod = ctx.pods.get(podSandboxId);
    await ctx.pods.remove(podSandboxId).catch((e) => ctx.log.warn('cannot remove a pod an NRI plugin refused', { pod: podSandboxId, err: String(e) }));
    if (pod) await ctx.nri.removePodSandbox(pod);
    throw err;
  } finally {
    release();
  }
  return { podSandboxId };
};
