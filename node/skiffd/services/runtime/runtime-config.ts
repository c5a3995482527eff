// RuntimeConfig: tells the kubelet which cgroup driver to match: the one in use, `auto` resolved
// (config key runtime.cgroup_driver). Kubelets from 1.34 take their driver from this answer.
import { CgroupDriver, type RuntimeConfigRequest, type RuntimeConfigResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const runtimeConfig: UnaryRpc<RuntimeConfigRequest, RuntimeConfigResponse> = async (ctx) => ({
  linux: { cgroupDriver: ctx.cgroups.name === 'systemd' ? CgroupDriver.SYSTEMD : CgroupDriver.CGROUPFS },
});
