// What the kernel does with RuntimeDefault on skiffd: a static probe (test/fixtures/seccomp-probe)
// makes one call per probe in a container, and each outcome must be what containerd 2.1's recorded
// profile decides for the same call and arguments: io_uring, namespace-making clone flags, clone3 (ENOSYS,
// so libc falls back to clone), personality(ADDR_NO_RANDOMIZE), keyrings and vsock sockets are refused;
// ptrace of oneself and plain clone are not. The same probe in
// an Unconfined container shows those calls succeed when nothing filters them, so each refusal is the
// profile's. The Debian node runs the same (test/guest/inside).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NamespaceMode, SecurityProfile_ProfileType } from '../../proto/gen/runtime/v1/api.ts';
import type { SeccompProfile } from '../../node/skiffd/confinement/seccomp.ts';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { freePort } from '../support/netns.ts';
import { podConfig } from '../support/pods.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { buildSeccompProbe, mismatches, parseProbeOutput } from '../support/seccomp-probe.ts';
import { startSkiffd, type SkiffdHandle } from '../support/skiffd.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
const recorded = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'cri', 'containerd-2.1-seccomp-x64.json'), 'utf8')) as {
  default: { seccomp: SeccompProfile };
};

/** Calls whose refusal is the point of the profile: each must succeed where nothing filters it. */
export const REFUSED_ONLY_BY_SECCOMP = [
  'io_uring_setup',
  'clone_newuser',
  'clone3',
  'unshare_newuser',
  'personality_addr_no_randomize',
  'keyctl',
  'add_key',
  'kcmp',
];

/** Runs the probe in a RuntimeDefault and an Unconfined container of one pod on `d` (busybox pulled). */
export async function probeBothWays(d: SkiffdHandle): Promise<{ confined: Map<string, string>; unconfined: Map<string, string> }> {
  const probeDir = await buildSeccompProbe();
  const sandboxConfig = podConfig('seccomp', { network: NamespaceMode.NODE });
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandboxConfig });
  try {
    const run = async (name: string, profileType: SecurityProfile_ProfileType) => {
      const { containerId } = await d.runtime.createContainer({
        podSandboxId,
        sandboxConfig,
        config: {
          metadata: { name },
          image: { image: BUSYBOX },
          command: ['sleep', '3600'],
          mounts: [{ containerPath: '/probe', hostPath: probeDir, readonly: true }],
          linux: { securityContext: { seccomp: { profileType, localhostRef: '' } } },
        },
      });
      await d.runtime.startContainer({ containerId });
      const r = await d.runtime.execSync({ containerId, cmd: ['/probe/probe'], timeout: 120n });
      assert.equal(r.exitCode, 0, `the probe ran in ${name}: ${r.stderr}`);
      return parseProbeOutput(r.stdout.toString());
    };
    return {
      confined: await run('confined', SecurityProfile_ProfileType.RuntimeDefault),
      unconfined: await run('unconfined', SecurityProfile_ProfileType.Unconfined),
    };
  } finally {
    await d.runtime.stopPodSandbox({ podSandboxId });
    await d.runtime.removePodSandbox({ podSandboxId });
  }
}

test("RuntimeDefault on skiffd refuses each call containerd 2.1's profile refuses, with its errno, and allows the rest", { timeout: 300_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry', 'gcc'] })) return;
  if (process.arch !== 'x64') return unavailable(t, `the recorded containerd profile is x86_64's; this machine is ${process.arch}`);
  const missing = kitMissing('1.36');
  if (missing) return unavailable(t, missing);
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const d = await startSkiffd({ config: registry.mirrorsToml });
  t.after(() => d.cleanup());
  await d.images.pullImage({ image: { image: BUSYBOX } });
  const { confined, unconfined } = await probeBothWays(d);
  assert.deepEqual(mismatches(confined, recorded.default.seccomp), [], `outcomes under RuntimeDefault: ${JSON.stringify(Object.fromEntries(confined))}`);
  for (const probe of REFUSED_ONLY_BY_SECCOMP) assert.equal(unconfined.get(probe), 'ok', `${probe} succeeds where nothing filters it`);
  assert.equal(confined.get('ptrace_traceme'), 'ok', 'strace and debuggers work in the container');
});
