// A ContainerManager on the real runc and conmon with one test pod and a busybox image, for tests that
// drive containers below the gRPC layer. Everything it made (containers, the pod's cgroups, the temp
// dir) goes when the test ends.
import { existsSync, mkdtempSync, rmdirSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { AppArmorPolicy } from '../../node/skiffd/confinement/apparmor/index.ts';
import type { CdiPolicy } from '../../node/skiffd/cdi/index.ts';
import { ContainerManager } from '../../node/skiffd/containers/manager.ts';
import type { ResolvedImage } from '../../node/skiffd/containers/types.ts';
import { makeOciRuntime } from '../../node/skiffd/oci/index.ts';
import { allCgroupDirs } from '../../node/skiffd/cgroups/layout.ts';
import type { PodSandboxRecord } from '../../node/skiffd/pods/types.ts';
import { makeBusyboxRootfs } from './rootfs.ts';
import { testPodRecord } from './pods.ts';

const IMAGE_ID = `sha256:${'c'.repeat(64)}`;

export interface RuncContainers {
  /** The manager now open (replaced by reopen). */
  readonly manager: ContainerManager;
  /** Closes the manager and opens another on the same root and state, as a restart of the daemon would. */
  reopen(): Promise<ContainerManager>;
  pod: PodSandboxRecord;
  /** The manager's state dir (exit files are in exits/). */
  state: string;
  cgroupParent: string;
}

/**
 * `image: { image: 'busybox' }` resolves to a busybox rootfs whose command is `sh`; `images` adds more
 * (unpacked layer directories, base first), e.g. for image volumes.
 */
export async function startRuncContainers(
  t: TestContext,
  options: {
    log?: ConstructorParameters<typeof ContainerManager>[0]['log'];
    apparmor?: AppArmorPolicy;
    cdi?: CdiPolicy;
    images?: Record<string, Omit<ResolvedImage, 'config'>>;
  } = {},
): Promise<RuncContainers> {
  const dir = mkdtempSync('/tmp/skc-');
  const rootfs = makeBusyboxRootfs({ parent: dir });
  const cgroupParent = `/skiff-test-${randomBytes(4).toString('hex')}`;
  const pod = testPodRecord({ logDirectory: join(dir, 'logs'), cgroupParent });
  const state = join(dir, 'state');
  const open = () =>
    new ContainerManager({
      ...(options.log ? { log: options.log } : {}),
      ...(options.apparmor ? { apparmor: options.apparmor } : {}),
      ...(options.cdi ? { cdi: options.cdi } : {}),
      root: join(dir, 'root'),
      state,
      runtime: makeOciRuntime({ root: join(state, 'runc') }),
      pods: { get: (id) => (id === pod.id ? pod : undefined) },
      images: {
        resolve: (name) => {
          if (name === 'busybox') return { id: IMAGE_ID, ref: `example.test/busybox@${IMAGE_ID}`, layers: [rootfs.dir], config: { cmd: ['sh'] } };
          const more = options.images?.[name];
          return more ? { ...more, config: {} } : undefined;
        },
      },
    });
  let manager = open();
  await manager.init();
  t.after(async () => {
    for (const v of await manager.list()) await manager.remove(v.record.id).catch(() => {});
    await manager.close();
    // A cgroup can stay busy for a moment after its last process is reaped.
    for (const d of allCgroupDirs(cgroupParent)) {
      for (let i = 0; existsSync(d) && i < 50; i++) {
        try {
          rmdirSync(d);
        } catch {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get manager() {
      return manager;
    },
    async reopen() {
      await manager.close();
      manager = open();
      await manager.init();
      return manager;
    },
    pod,
    state,
    cgroupParent,
  };
}
