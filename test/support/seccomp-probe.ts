// The seccomp probe (test/fixtures/seccomp-probe/probe.c), built static with gcc once per machine, run
// in a container, and judged against a profile: for each probe, the call it makes and the arguments
// that decide a rule, so the outcome a profile predicts can be computed from the profile itself.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { NamespaceMode, SecurityProfile_ProfileType } from '../../proto/gen/runtime/v1/api.ts';
import type { SeccompProfile, SeccompRule } from '../../node/skiffd/confinement/seccomp.ts';
import { runCommand } from './commands.ts';
import { podConfig } from './pods.ts';
import { repoRoot, type SkiffdHandle } from './skiffd.ts';

const SOURCE = join(repoRoot, 'test', 'fixtures', 'seccomp-probe', 'probe.c');

/** containerd 2.1's RuntimeDefault profile as it wrote it on x86_64 (test/fixtures/cri/README.md). */
export const RECORDED_CONTAINERD_PROFILE = JSON.parse(readFileSync(join(repoRoot, 'test', 'fixtures', 'cri', 'containerd-2.1-seccomp-x64.json'), 'utf8')) as {
  containerd: string;
  default: { bounding: string[]; seccomp: SeccompProfile & { defaultErrnoRet?: number } };
  withCapability: Record<string, { bounding: string[]; adds: SeccompRule[]; removes: SeccompRule[] }>;
};

/** Builds the probe (cached by its source's hash) and returns the directory that holds it, as `probe`. */
export async function buildSeccompProbe(): Promise<string> {
  const source = readFileSync(SOURCE);
  const dir = join(tmpdir(), `skiff-seccomp-probe-${createHash('sha256').update(source).digest('hex').slice(0, 12)}`);
  if (existsSync(join(dir, 'probe'))) return dir;
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const temp = join(dir, `probe.${process.pid}`);
  const built = await runCommand('gcc', ['-static', '-O2', '-o', temp, SOURCE], { timeoutMs: 300_000 });
  if (built.code !== 0) throw new Error(`gcc could not build the seccomp probe: ${built.stderr}`);
  renameSync(temp, join(dir, 'probe'));
  return dir;
}

/** What each probe asks of seccomp: the call, and its arguments where a rule looks at them. */
export const PROBES: Record<string, { call: string; args?: number[] }> = {
  io_uring_setup: { call: 'io_uring_setup' },
  clone_newuser: { call: 'clone', args: [0x10000000 | 17] },
  clone_plain: { call: 'clone', args: [17] },
  clone3: { call: 'clone3' },
  unshare_newuser: { call: 'unshare', args: [0x10000000] },
  unshare_newns: { call: 'unshare', args: [0x20000] },
  personality_query: { call: 'personality', args: [0xffffffff] },
  personality_addr_no_randomize: { call: 'personality', args: [0x0040000] },
  keyctl: { call: 'keyctl' },
  add_key: { call: 'add_key' },
  socket_vsock: { call: 'socket', args: [40] },
  socket_inet: { call: 'socket', args: [2] },
  socketpair_unix: { call: 'socketpair', args: [1] },
  ptrace_traceme: { call: 'ptrace' },
  process_vm_readv: { call: 'process_vm_readv' },
  userfaultfd: { call: 'userfaultfd' },
  chroot: { call: 'chroot' },
  setns: { call: 'setns' },
  acct: { call: 'acct' },
  mount: { call: 'mount' },
  reboot: { call: 'reboot' },
  kexec_load: { call: 'kexec_load' },
  init_module: { call: 'init_module' },
  open_by_handle_at: { call: 'open_by_handle_at' },
  clock_settime: { call: 'clock_settime' },
  set_mempolicy: { call: 'set_mempolicy' },
  move_pages: { call: 'move_pages' },
  lookup_dcookie: { call: 'lookup_dcookie' },
  ioperm: { call: 'ioperm' },
  sethostname: { call: 'sethostname' },
  bpf: { call: 'bpf' },
  perf_event_open: { call: 'perf_event_open' },
  kcmp: { call: 'kcmp' },
};

/** The probe's output as probe name -> "ok" or "E<errno>". */
export function parseProbeOutput(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^(\S+) (ok|E\d+)$/.exec(line.trim());
    if (m) out.set(m[1], m[2]);
  }
  return out;
}

/** What a profile does with one call: allow it, or refuse it with an errno (EPERM unless a rule says otherwise). */
export function decide(
  profile: { syscalls: readonly SeccompRule[] },
  call: string,
  args: readonly number[] = [],
): { allow: true } | { allow: false; errno: number } {
  const holds = (rule: SeccompRule) =>
    (rule.args ?? []).every((a) => {
      const v = BigInt(args[a.index] ?? 0);
      const value = BigInt(a.value);
      if (a.op === 'SCMP_CMP_EQ') return v === value;
      if (a.op === 'SCMP_CMP_NE') return v !== value;
      return (v & value) === BigInt(a.valueTwo ?? 0);
    });
  const matching = profile.syscalls.filter((r) => r.names.includes(call) && holds(r));
  if (matching.some((r) => r.action === 'SCMP_ACT_ALLOW')) return { allow: true };
  const refusal = matching.find((r) => r.action === 'SCMP_ACT_ERRNO');
  return { allow: false, errno: refusal?.errnoRet ?? 1 };
}

/**
 * Where the probes' outcomes differ from what `profile` decides: a refused call must fail with the
 * profile's errno; an allowed one must not fail with EPERM (it may fail for the kernel's own reasons,
 * such as a missing module, but never as a refusal).
 */
export function mismatches(outcomes: Map<string, string>, profile: { syscalls: readonly SeccompRule[] }): string[] {
  const out: string[] = [];
  for (const [probe, { call, args }] of Object.entries(PROBES)) {
    const seen = outcomes.get(probe);
    const d = decide(profile, call, args);
    if (seen === undefined) out.push(`${probe}: no outcome`);
    else if (!d.allow && seen !== `E${d.errno}`) out.push(`${probe}: ${seen}, where the profile refuses ${call} with errno ${d.errno}`);
    else if (d.allow && seen === 'E1') out.push(`${probe}: refused (EPERM), where the profile allows ${call}`);
  }
  return out;
}

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

/** Runs the probe in a RuntimeDefault and an Unconfined container of one pod on `d` (`image` pulled, with a shell's sleep). */
export async function probeBothWays(d: SkiffdHandle, image: string): Promise<{ confined: Map<string, string>; unconfined: Map<string, string> }> {
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
          image: { image },
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
