// RuntimeDefault makes the same decisions as containerd 2.1's default profile: for the default
// capabilities and for each capability that unlocks calls, every system call is allowed, allowed with
// the same arguments, or refused with the same errno. The other side is a recorded copy of the profile
// containerd 2.1 wrote into a container's spec on x86_64 (scripts/record-containerd-seccomp.ts), so
// drift on either side shows here. Whether the kernel enforces it is seccomp-probes.test.ts's part.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultSeccompProfile, kernelAtLeast48, type SeccompProfile, type SeccompRule } from '../../node/skiffd/confinement/seccomp.ts';

interface Recorded {
  containerd: string;
  arch: string;
  default: { bounding: string[]; seccomp: SeccompProfile & { defaultErrnoRet?: number } };
  withCapability: Record<string, { bounding: string[]; adds: SeccompRule[]; removes: SeccompRule[] }>;
}

const recorded = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'cri', 'containerd-2.1-seccomp-x64.json'), 'utf8')) as Recorded;

/** Each call's rules, as comparable text: action, errno and argument conditions; one rule per line. */
export function decisions(profile: { syscalls: readonly SeccompRule[] }): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const rule of profile.syscalls) {
    const args = (rule.args ?? []).map((a) => `${a.index} ${a.op} ${a.value}${a.valueTwo ? `/${a.valueTwo}` : ''}`).join(' & ');
    const what = `${rule.action}${rule.errnoRet !== undefined ? `(${rule.errnoRet})` : ''}${args ? ` if ${args}` : ''}`;
    for (const name of rule.names) out.set(name, [...(out.get(name) ?? []), what].sort());
  }
  return out;
}

function differences(ours: Map<string, string[]>, theirs: Map<string, string[]>): string[] {
  const names = [...new Set([...ours.keys(), ...theirs.keys()])].sort();
  return names
    .filter((n) => JSON.stringify(ours.get(n) ?? []) !== JSON.stringify(theirs.get(n) ?? []))
    .map((n) => `${n}: skiffd ${JSON.stringify(ours.get(n) ?? 'refused')} containerd ${JSON.stringify(theirs.get(n) ?? 'refused')}`);
}

test(`RuntimeDefault decides every call as containerd ${recorded.containerd}'s default profile does, capability by capability (x86_64)`, () => {
  const theirs = recorded.default.seccomp;
  const cases: [string, string[], SeccompRule[]][] = [['the default capabilities', recorded.default.bounding, theirs.syscalls]];
  const key = (r: SeccompRule) => JSON.stringify(r);
  for (const [cap, c] of Object.entries(recorded.withCapability)) {
    const removed = new Set(c.removes.map(key));
    cases.push([`CAP_${cap} added`, c.bounding, [...theirs.syscalls.filter((r) => !removed.has(key(r))), ...c.adds]]);
  }
  for (const [what, bounding, theirRules] of cases) {
    const ours = defaultSeccompProfile(bounding, 'x64', true);
    assert.equal(ours.defaultAction, theirs.defaultAction, what);
    // Neither sets defaultErrnoRet: runc then answers EPERM.
    assert.equal((ours as { defaultErrnoRet?: number }).defaultErrnoRet, theirs.defaultErrnoRet, what);
    assert.deepEqual(ours.architectures, theirs.architectures, what);
    assert.deepEqual(differences(decisions(ours), decisions({ syscalls: theirRules })), [], `with ${what}`);
  }
});

test('the profile is built once per combination, and cannot be changed through a container', () => {
  const caps = ['CAP_CHOWN', 'CAP_SYS_CHROOT', 'CAP_KILL'];
  const first = defaultSeccompProfile(caps, 'x64', true);
  assert.equal(defaultSeccompProfile([...caps].reverse(), 'x64', true), first, 'the same object for the same unlocking capabilities');
  assert.equal(defaultSeccompProfile([...caps, 'CAP_NET_RAW'], 'x64', true), first, 'a capability that unlocks nothing changes nothing');
  assert.notEqual(defaultSeccompProfile([...caps, 'CAP_SYS_ADMIN'], 'x64', true), first);
  assert.throws(() => {
    (first.syscalls as SeccompRule[]).push({ names: ['kexec_load'], action: 'SCMP_ACT_ALLOW' });
  }, TypeError);
});

test('arm64 and older kernels: their own calls, and ptrace only from Linux 4.8', () => {
  const arm = decisions(defaultSeccompProfile(['CAP_SYS_CHROOT'], 'arm64', true));
  assert.deepEqual(defaultSeccompProfile([], 'arm64', true).architectures, ['SCMP_ARCH_ARM', 'SCMP_ARCH_AARCH64']);
  for (const call of ['set_tls', 'cacheflush', 'sync_file_range2']) assert.deepEqual(arm.get(call), ['SCMP_ACT_ALLOW'], call);
  assert.equal(arm.get('arch_prctl'), undefined, 'an x86 call is not allowed on arm64');
  assert.equal(decisions(defaultSeccompProfile([], 'x64', false)).get('ptrace'), undefined);
  assert.deepEqual(decisions(defaultSeccompProfile(['CAP_SYS_PTRACE'], 'x64', false)).get('ptrace'), ['SCMP_ACT_ALLOW']);
  assert.equal(kernelAtLeast48('4.7.10'), false);
  assert.equal(kernelAtLeast48('4.8.0'), true);
  assert.equal(kernelAtLeast48('6.1.0-28-amd64'), true);
});
