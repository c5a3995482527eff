// kubelet 1.36 with its UserNamespacesSupport gate runs a `hostUsers: false` static pod on skiffd: the
// container is root of a user namespace mapped to unprivileged host IDs, sees its rootfs, /etc/hosts and
// an emptyDir as its own (0:0), and deleting the pod leaves nothing behind. A container with
// `procMount: Unmasked` gets /proc as the kubelet asks (no masked or read-only paths). Then skiffd stops advertising
// user namespaces (its runtime's `features` no longer lists them, as an older runc would) and the
// kubelet refuses such a pod: it never runs, neither in a user namespace nor in the host's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startKubeletNode } from '../support/kubelet.ts';
import { containerStatus, isReady } from '../support/kube-types.ts';
import { container, emptyDir, pod } from '../support/kube-manifests.ts';
import { containerInfo, execIn, namespaceOf, runtimeId, sandboxOf } from '../support/kube-host-reads.ts';
import { deletionSnapshot, leftoversOf } from '../support/kube-leftovers.ts';
import { until } from '../support/wait.ts';
import { which } from '../../node/skiffd/util/which.ts';

/** `uid_map` lines: [inside, outside, count]. */
const idMap = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number));

test('kubelet 1.36 runs a hostUsers: false pod in a user namespace of its own', { timeout: 20 * 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-kubelet-userns-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // runc itself, except that while `hide` exists its features do not list the user namespace.
  const hide = join(dir, 'hide-userns');
  const runtime = join(dir, 'runc');
  const runc = which('runc') ?? 'runc';
  writeFileSync(
    runtime,
    `#!/bin/sh\nif [ "$1" = features ] && [ -e '${hide}' ]; then '${runc}' features | sed 's/"user"/"user-hidden"/'; exit; fi\nexec '${runc}' "$@"\n`,
  );
  chmodSync(runtime, 0o755);
  chmodSync(dir, 0o755);

  const node = await startKubeletNode(t, {
    featureGates: { UserNamespacesSupport: true },
    skiffdConfig: `[runtime]\nruntime_path = "${runtime}"\n`,
  });
  if (!node) return;
  t.after(() => node.cleanup());

  await t.test('Ready in its own user namespace; root owns its rootfs, /etc/hosts and the emptyDir; deletion leaves nothing', async () => {
    const status = await node.runtime.status({});
    assert.equal(status.runtimeHandlers[0]?.features?.userNamespaces, true, 'skiffd advertises user namespaces');
    const data = emptyDir('data', '/data');
    const name = node.writePod(
      pod('userns', {
        hostUsers: false,
        containers: [container('app', { script: 'echo hi > /data/x; exec sleep 3600', extra: { volumeMounts: [data.mount] } })],
        volumes: [data.volume],
      }),
    );
    const ready = await node.waitForPod(name, 'Ready', isReady);
    assert.equal(containerStatus(ready, 'app')?.restartCount, 0);

    const inside = idMap(await execIn(node, ready, 'app', ['cat', '/proc/self/uid_map']));
    assert.equal(inside.length, 1, `one range: ${JSON.stringify(inside)}`);
    const [first, hostFirst, count] = inside[0]!;
    assert.equal(first, 0);
    assert.ok(hostFirst! >= 65536, `root is an unprivileged host ID, not the host's root: ${JSON.stringify(inside)}`);
    assert.equal(count, 65536);
    assert.deepEqual(idMap(await execIn(node, ready, 'app', ['cat', '/proc/self/gid_map'])), inside, 'GIDs mapped as UIDs');

    const { pid } = await containerInfo(node, runtimeId(ready, 'app'));
    assert.notEqual(namespaceOf(pid, 'user'), namespaceOf('self', 'user'), 'not the host user namespace');
    // The host sees the container's root as the mapped ID.
    const hostUid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    assert.equal(Number(hostUid), hostFirst);

    assert.equal((await execIn(node, ready, 'app', ['id', '-u'])).trim(), '0');
    const owners = await execIn(node, ready, 'app', ['stat', '-c', '%n %u:%g', '/', '/bin/sh', '/etc/passwd', '/etc/hosts', '/data', '/data/x']);
    assert.deepEqual(owners.trim().split('\n'), ['/ 0:0', '/bin/sh 0:0', '/etc/passwd 0:0', '/etc/hosts 0:0', '/data 0:0', '/data/x 0:0']);
    // The emptyDir is ID-mapped, not re-owned: on the host its file belongs to the host's root.
    const x = statSync(join(node.rootDir, 'pods', ready.metadata.uid, 'volumes', 'kubernetes.io~empty-dir', 'data', 'x'));
    assert.deepEqual([x.uid, x.gid], [0, 0]);

    const snapshot = await deletionSnapshot(node, ready, ['app']);
    node.deletePod(name);
    await node.waitForPodGone(name);
    await until('the pod to leave nothing behind', async () => (await leftoversOf(node, snapshot)).length === 0, 150_000).catch(async (err: Error) => {
      throw new Error(`${err.message}; still there: ${(await leftoversOf(node, snapshot)).join('; ')}`);
    });
  });

  await t.test('procMount: Unmasked gets an unmasked, writable /proc; the default procMount beside it keeps the masks', async () => {
    const name = node.writePod(
      pod('procmount', {
        hostUsers: false,
        containers: [
          container('unmasked', { script: 'exec sleep 3600', extra: { securityContext: { procMount: 'Unmasked' } } }),
          container('masked', { script: 'exec sleep 3600' }),
        ],
      }),
    );
    const ready = await node.waitForPod(name, 'Ready', isReady);
    // The kubelet sends empty masked and read-only lists for Unmasked: nothing is bound over /proc/interrupts,
    // and /proc/sys is not mounted read-only on its own.
    const look = (c: string) =>
      execIn(node, ready, c, [
        'sh',
        '-c',
        'if [ -c /proc/interrupts ]; then echo masked; else echo plain; fi; grep -c " /proc/sys " /proc/self/mountinfo || true',
      ]);
    assert.deepEqual((await look('unmasked')).trim().split('\n'), ['plain', '0']);
    assert.deepEqual((await look('masked')).trim().split('\n'), ['masked', '1']);
    node.deletePod(name);
    await node.waitForPodGone(name);
  });

  await t.test('without user namespaces advertised, the kubelet refuses the pod: it runs nowhere', async (t) => {
    writeFileSync(hide, '');
    await node.restartSkiffd('SIGTERM');
    const status = await node.runtime.status({});
    assert.equal(status.runtimeHandlers[0]?.features?.userNamespaces, false, 'skiffd no longer advertises user namespaces');

    const name = node.writePod(pod('refused', { hostUsers: false, containers: [container('app', { script: 'exec sleep 3600' })] }));
    const listed = await node.waitForPod(name, 'listed by the kubelet', (p) => p);
    // The kubelet reads the runtime's handlers every few seconds; until then skiffd itself refuses the sandbox.
    const refusal = await until(
      'the kubelet to refuse the pod for want of user namespaces',
      () =>
        node
          .kubeletLogs()
          .split('\n')
          .find((l) => l.includes(name) && /hostUsers: false.*does not support user namespaces/.test(l)),
      90_000,
    );
    assert.match(refusal, /runtime does not support user namespaces/);
    t.diagnostic(`the kubelet: ${refusal.slice(0, 400)}`);
    const p = await node.pod(name);
    assert.equal(
      (p?.status.containerStatuses ?? []).some((c) => c.state.running),
      false,
      `no container runs: ${JSON.stringify(p?.status)}`,
    );
    assert.equal(await sandboxOf(node, listed.metadata.uid), undefined, 'no sandbox, in the host user namespace or any other');
    node.deletePod(name);
    await node.waitForPodGone(name);
  });
});
