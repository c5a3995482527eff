// What the kernel does with RuntimeDefault on skiffd: a static probe (test/fixtures/seccomp-probe)
// makes one call per probe in a container, and each outcome must be what containerd 2.1's recorded
// profile decides for the same call and arguments: io_uring, namespace-making clone flags, clone3 (ENOSYS,
// so libc falls back to clone), personality(ADDR_NO_RANDOMIZE), keyrings and vsock sockets are refused;
// ptrace of oneself and plain clone are not. The same probe in an Unconfined container shows those calls
// succeed when nothing filters them, so each refusal is the profile's. The Debian node runs the same
// (test/guest/inside).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { freePort } from '../support/netns.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { mismatches, probeBothWays, RECORDED_CONTAINERD_PROFILE, REFUSED_ONLY_BY_SECCOMP } from '../support/seccomp-probe.ts';
import { startSkiffd } from '../support/skiffd.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';

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
  const { confined, unconfined } = await probeBothWays(d, BUSYBOX);
  assert.deepEqual(
    mismatches(confined, RECORDED_CONTAINERD_PROFILE.default.seccomp),
    [],
    `outcomes under RuntimeDefault: ${JSON.stringify(Object.fromEntries(confined))}`,
  );
  for (const probe of REFUSED_ONLY_BY_SECCOMP) assert.equal(unconfined.get(probe), 'ok', `${probe} succeeds where nothing filters it`);
  assert.equal(confined.get('ptrace_traceme'), 'ok', 'strace and debuggers work in the container');
});
