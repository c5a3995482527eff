// Records the RuntimeDefault seccomp profile containerd 2.1 writes into a container's OCI spec, for the
// test that diffs skiffd's profile against it (test/cri/seccomp-profile.test.ts). It runs the
// conformance kit's containerd 2.1 (containerd2.sh) with the kit's registry, makes a pod and, for each
// capability set below, a container under RuntimeDefault, and reads the profile from the container's
// bundle. Run it again (as root, with ../shared beside the checkout) when containerd moves.
//
//   npx tsx scripts/record-containerd-seccomp.ts [OUT.json]
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecurityProfile_ProfileType } from '../proto/gen/runtime/v1/api.ts';
import { startContainerdPeer } from '../bench/cri/containerd-peer.ts';
import { startKitRegistry } from '../test/support/cri-conformance.ts';
import { freePort } from '../test/support/netns.ts';
import { podConfig } from '../test/support/pods.ts';

if (process.argv.includes('--help')) {
  console.log(
    "usage: npx tsx scripts/record-containerd-seccomp.ts [OUT.json]\nRecords containerd 2.1's RuntimeDefault seccomp profile, per capability set, as JSON.",
  );
  process.exit(0);
}
const out = process.argv[2] ?? join(import.meta.dirname, '..', 'test', 'fixtures', 'cri', `containerd-2.1-seccomp-${process.arch}.json`);
const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';

/** The capability sets recorded: the runtime's defaults, and each capability that unlocks calls added alone. */
const ADDED = [
  '',
  'SYS_ADMIN',
  'SYS_PTRACE',
  'DAC_READ_SEARCH',
  'SYS_BOOT',
  'SYS_MODULE',
  'SYS_PACCT',
  'SYS_RAWIO',
  'SYS_TIME',
  'SYS_TTY_CONFIG',
  'SYS_NICE',
  'SYSLOG',
  'BPF',
  'PERFMON',
];

const dir = mkdtempSync(join(tmpdir(), 'record-seccomp-'));
const registry = await startKitRegistry(await freePort());
const host = new URL(registry.url).host;
const mirrors = Object.fromEntries(['registry.k8s.io', 'gcr.io', 'docker.io'].map((h) => [h, registry.url]));
const peer = await startContainerdPeer(join(dir, 'containerd'), host, 'registry.k8s.io/pause:3.9', mirrors, '2.1');
try {
  await peer.images.pullImage({ image: { image: BUSYBOX } });
  const sandboxConfig = podConfig('record');
  const { podSandboxId } = await peer.runtime.runPodSandbox({ config: sandboxConfig });
  const profiles: Record<string, unknown> = {};
  for (const cap of ADDED) {
    const { containerId } = await peer.runtime.createContainer({
      podSandboxId,
      sandboxConfig,
      config: {
        metadata: { name: `c-${cap.toLowerCase() || 'default'}` },
        image: { image: BUSYBOX },
        command: ['sleep', '60'],
        linux: {
          securityContext: {
            seccomp: { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' },
            capabilities: { addCapabilities: cap ? [cap] : [], dropCapabilities: [], addAmbientCapabilities: [] },
          },
        },
      },
    });
    // containerd writes the bundle at create; its task directory is named by the container id.
    const tasks = join(dir, 'containerd', 'state', 'io.containerd.runtime.v2.task', 'k8s.io');
    if (!readdirSync(tasks).includes(containerId)) await peer.runtime.startContainer({ containerId });
    const spec = JSON.parse(readFileSync(join(tasks, containerId, 'config.json'), 'utf8')) as {
      process: { capabilities: { bounding: string[] } };
      linux: { seccomp: unknown };
    };
    profiles[cap || 'default'] = { bounding: spec.process.capabilities.bounding, seccomp: spec.linux.seccomp };
    console.log(`recorded ${cap || 'the default capabilities'}`);
  }
  const version = (await peer.runtime.version({})).runtimeVersion;
  // The default profile whole; for each added capability only the rules it adds and removes.
  type Recorded = { bounding: string[]; seccomp: { syscalls: unknown[] } };
  const base = profiles.default as Recorded;
  const key = (rule: unknown) => JSON.stringify(rule);
  const baseKeys = new Set(base.seccomp.syscalls.map(key));
  const withCapability = Object.fromEntries(
    ADDED.filter(Boolean).map((cap) => {
      const p = profiles[cap] as Recorded;
      const keys = new Set(p.seccomp.syscalls.map(key));
      return [
        cap,
        {
          bounding: p.bounding,
          adds: p.seccomp.syscalls.filter((r) => !baseKeys.has(key(r))),
          removes: base.seccomp.syscalls.filter((r) => !keys.has(key(r))),
        },
      ];
    }),
  );
  writeFileSync(out, `${JSON.stringify({ containerd: version, arch: process.arch, default: base, withCapability }, null, 1)}\n`);
  console.log(`wrote ${out}`);
} finally {
  await peer.teardown();
  await registry.stop();
  rmSync(dir, { recursive: true, force: true });
}
