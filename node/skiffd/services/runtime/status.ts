// Status: RuntimeReady and NetworkReady, evaluated on every call. `verbose` adds `info.config`, the
// effective configuration as JSON with registry secrets redacted (the key containerd uses too).
import type { StatusRequest, StatusResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { redactedConfig } from '../../config.ts';
import { findCniNetwork, networkReady, runtimeReady } from '../../readiness.ts';
import { recursiveReadOnlySupport } from '../../oci/features.ts';
import { configuredUserNamespaceSupport } from '../../oci/userns-support.ts';

export const status: UnaryRpc<StatusRequest, StatusResponse> = async (ctx, request) => {
  const conditions = [runtimeReady(ctx.config), networkReady(ctx.config)];
  // Detected once (the kernel, the OCI runtime, overlayfs metacopy), then cached.
  const userns = await configuredUserNamespaceSupport(ctx.config);
  const info: Record<string, string> = {};
  if (request.verbose) {
    info.config = JSON.stringify(redactedConfig(ctx.config));
    const { network } = findCniNetwork(ctx.config.cni.confDir);
    info.network = JSON.stringify({ podCidr: ctx.network.podCidr, cniNetwork: network ?? null });
    info.apparmor = JSON.stringify(ctx.apparmor);
    info.cdi = JSON.stringify({ enabled: ctx.config.cdi.enable, specDirs: ctx.config.cdi.specDirs });
  }
  // The one handler (""), the configured OCI runtime: recursive read-only mounts as its own
  // `features` command and the kernel allow; user namespaces as the check at startup found.
  const rro = recursiveReadOnlySupport(await ctx.containers.runtime.features());
  return {
    status: { conditions },
    info,
    runtimeHandlers: [{ name: '', features: { recursiveReadOnlyMounts: rro.supported, userNamespaces: userns.supported } }],
    // SupplementalGroupsPolicy Merge and Strict, and ContainerStatus.user, are skiffd's own doing.
    features: { supplementalGroupsPolicy: true, userNamespacesHostNetwork: false },
  };
};
