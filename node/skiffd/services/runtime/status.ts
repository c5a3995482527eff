// Status: RuntimeReady and NetworkReady, evaluated on every call. `verbose` adds `info.config`, the
// effective configuration as JSON with registry secrets redacted (the key containerd uses too).
import type { StatusRequest, StatusResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { redactedConfig } from '../../config.ts';
import { findCniNetwork, networkReady, runtimeReady } from '../../readiness.ts';
import { recursiveReadOnlySupport } from '../../oci/features.ts';
import { handlerUserNamespaceSupport } from '../../oci/userns-support.ts';

export const status: UnaryRpc<StatusRequest, StatusResponse> = async (ctx, request) => {
  const conditions = [runtimeReady(ctx.config), networkReady(ctx.config)];
  const info: Record<string, string> = {};
  if (request.verbose) {
    info.config = JSON.stringify(redactedConfig(ctx.config));
    const { network } = findCniNetwork(ctx.config.cni.confDir);
    info.network = JSON.stringify({ podCidr: ctx.network.podCidr, cniNetwork: network ?? null });
    info.apparmor = JSON.stringify(ctx.apparmor);
    info.cdi = JSON.stringify({ enabled: ctx.config.cdi.enable, specDirs: ctx.config.cdi.specDirs });
  }
  // Each handler, and "" for the default (as containerd lists them): recursive read-only mounts as its
  // runtime's `features` command and the kernel allow; user namespaces as the check at startup found
  // (both detected once per runtime binary, then cached).
  const handlers = await Promise.all(
    ctx.containers.runtimes.all().map(async ({ name, runtime }) => {
      const rro = recursiveReadOnlySupport(await runtime.features());
      const userns = await handlerUserNamespaceSupport(ctx.config, name);
      return { name, features: { recursiveReadOnlyMounts: rro.supported, userNamespaces: userns.supported } };
    }),
  );
  const byDefault = handlers.find((h) => h.name === ctx.containers.runtimes.defaultName);
  return {
    status: { conditions },
    info,
    runtimeHandlers: [...(byDefault ? [{ ...byDefault, name: '' }] : []), ...handlers],
    // SupplementalGroupsPolicy Merge and Strict, and ContainerStatus.user, are skiffd's own doing.
    features: { supplementalGroupsPolicy: true, userNamespacesHostNetwork: false },
  };
};
