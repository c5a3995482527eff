// RuntimeConfig: tells the kubelet which cgroup driver to match (config key runtime.cgroup_driver).
import { CgroupDriver, type RuntimeConfigRequest, type RuntimeConfigResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const runtimeConfig: UnaryRpc<RuntimeConfigRequest, RuntimeConfigResponse> = async (ctx) => ({
  linux: { cgroupDriver: ctx.config.runtime.cgroupDriver === 'systemd' ? CgroupDriver.SYSTEMD : CgroupDriver.CGROUPFS },
});
