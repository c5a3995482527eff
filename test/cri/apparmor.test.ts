// AppArmor: which profile a container runs under for each request, the default profile skiffd generates
// and when it loads it, and, on this host where AppArmor is off, requests for confinement refused
// clearly. Enforcement itself is checked on the Debian node with AppArmor on (test/guest/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Status } from 'nice-grpc-common';
import { ContainerConfig, type LinuxContainerSecurityContext, SecurityProfile_ProfileType } from '../../proto/gen/runtime/v1/api.ts';
import { appArmorHost, containerAppArmorProfile, DEFAULT_PROFILE_NAME, type AppArmorHost } from '../../node/skiffd/confinement/apparmor/index.ts';
import { openAppArmor } from '../../node/skiffd/confinement/apparmor/index.ts';
import { defaultProfile } from '../../node/skiffd/confinement/apparmor/default-profile.ts';
import { createLogger } from '../../node/skiffd/logger.ts';
import { runCommand } from '../support/commands.ts';
import { needs, which } from '../support/prereq.ts';
import { startRuncContainers } from '../support/runc-containers.ts';

/** A host whose AppArmor is as given, with these profiles loaded; loads are recorded. */
function fakeHost(enabled: boolean, loaded: string[] = []): AppArmorHost & { loads: string[] } {
  const names = new Set(loaded);
  const loads: string[] = [];
  return {
    enabled,
    mediates: { signal: true, ptrace: true },
    parserAbi3: true,
    loaded: (name) => names.has(name),
    async load(text) {
      loads.push(text);
      names.add(/^profile (\S+)/m.exec(text)![1]);
    },
    loads,
  };
}

type SecurityInput = NonNullable<NonNullable<Parameters<typeof ContainerConfig.fromPartial>[0]['linux']>['securityContext']>;
const sc = (over: SecurityInput) => ContainerConfig.fromPartial({ linux: { securityContext: over } }).linux!.securityContext!;
const localhost = (ref: string) => ({ profileType: SecurityProfile_ProfileType.Localhost, localhostRef: ref });

test('AppArmor on: the profile each request gets', () => {
  const policy = { host: fakeHost(true, ['skiffd-default', 'deny-write']), defaultProfile: DEFAULT_PROFILE_NAME };
  const cases: [string, LinuxContainerSecurityContext | undefined, string | undefined][] = [
    ['no security context', undefined, 'skiffd-default'],
    ['no profile named', sc({}), 'skiffd-default'],
    ['no profile named, privileged', sc({ privileged: true }), undefined],
    ['RuntimeDefault', sc({ apparmor: { profileType: SecurityProfile_ProfileType.RuntimeDefault } }), 'skiffd-default'],
    ['RuntimeDefault, privileged', sc({ privileged: true, apparmor: { profileType: SecurityProfile_ProfileType.RuntimeDefault } }), undefined],
    ['Unconfined', sc({ apparmor: { profileType: SecurityProfile_ProfileType.Unconfined } }), undefined],
    ['Localhost', sc({ apparmor: localhost('deny-write') }), 'deny-write'],
    ['Localhost with the localhost/ prefix critest sends', sc({ apparmor: localhost('localhost/deny-write') }), 'deny-write'],
    ['Localhost, privileged', sc({ privileged: true, apparmor: localhost('deny-write') }), 'deny-write'],
    ['deprecated runtime/default', sc({ apparmorProfile: 'runtime/default' }), 'skiffd-default'],
    ['deprecated unconfined', sc({ apparmorProfile: 'unconfined' }), undefined],
    ['deprecated localhost/NAME', sc({ apparmorProfile: 'localhost/deny-write' }), 'deny-write'],
    ['the new field wins over the deprecated one', sc({ apparmorProfile: 'localhost/not-loaded', apparmor: localhost('deny-write') }), 'deny-write'],
  ];
  for (const [what, context, want] of cases) assert.equal(containerAppArmorProfile(context, policy), want, what);
});

test('AppArmor on: a profile that is not loaded, or a malformed request, is refused naming the field', () => {
  const policy = { host: fakeHost(true, ['skiffd-default']), defaultProfile: DEFAULT_PROFILE_NAME };
  const refused = (context: LinuxContainerSecurityContext, code: Status, message: RegExp) =>
    assert.throws(
      () => containerAppArmorProfile(context, policy),
      (err: { code: Status; details: string }) => err.code === code && message.test(err.details),
    );
  refused(
    sc({ apparmor: localhost('missing') }),
    Status.FAILED_PRECONDITION,
    /apparmor\.localhost_ref: the AppArmor profile "missing" is not loaded.*apparmor_parser -r/,
  );
  refused(sc({ apparmorProfile: 'localhost/missing' }), Status.FAILED_PRECONDITION, /apparmor_profile: the AppArmor profile "missing" is not loaded/);
  refused(sc({ apparmor: localhost('') }), Status.INVALID_ARGUMENT, /localhost_ref: a Localhost profile needs the name/);
  refused(
    sc({ apparmor: { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: 'x' } }),
    Status.INVALID_ARGUMENT,
    /set only for a Localhost profile/,
  );
  refused(
    sc({ apparmorProfile: 'docker-default' }),
    Status.INVALID_ARGUMENT,
    /apparmor_profile: "docker-default" is not runtime\/default, unconfined or localhost\/NAME/,
  );
});

test('AppArmor off: confinement asked for is refused; nothing changes for the rest', () => {
  const policy = { host: fakeHost(false), defaultProfile: DEFAULT_PROFILE_NAME };
  assert.equal(containerAppArmorProfile(undefined, policy), undefined);
  assert.equal(containerAppArmorProfile(sc({ apparmor: { profileType: SecurityProfile_ProfileType.Unconfined } }), policy), undefined);
  assert.equal(containerAppArmorProfile(sc({ apparmorProfile: 'unconfined' }), policy), undefined);
  for (const context of [sc({ apparmor: { profileType: SecurityProfile_ProfileType.RuntimeDefault } }), sc({ apparmorProfile: 'localhost/x' })]) {
    assert.throws(
      () => containerAppArmorProfile(context, policy),
      (err: { code: Status; details: string }) => err.code === Status.FAILED_PRECONDITION && /AppArmor is not enabled on this node/.test(err.details),
    );
  }
});

test('the default profile: generated for what the kernel mediates and the parser knows, and accepted by apparmor_parser', async (t) => {
  const full = defaultProfile('skiffd-default', { signal: true, ptrace: true, abi3: true });
  // Pinned to AppArmor 3.0's ABI: a 4.x parser would otherwise compile it as refusing user namespaces
  // (the Debian 13 node's seccomp probe shows it).
  assert.match(full, /^abi <abi\/3\.0>,\n\nprofile skiffd-default flags=\(attach_disconnected,mediate_deleted\) \{$/m);
  assert.match(full, /^ {2}deny mount,$/m);
  assert.match(full, /^ {2}signal \(send,receive\) peer=skiffd-default,$/m);
  // Debian 13 and Ubuntu 24.04 run runc and crun under profiles of their own (flags=(unconfined)): without
  // these, `runc kill` is refused and no container stops (the Debian 13 node showed it).
  assert.match(full, /^ {2}signal \(receive\) peer=runc,$/m);
  assert.match(full, /^ {2}signal \(receive\) peer=crun,$/m);
  assert.match(full, /^ {2}ptrace \(trace,read,tracedby,readby\) peer=skiffd-default,$/m);
  const bare = defaultProfile('skiffd-default', { signal: false, ptrace: false, abi3: false });
  assert.doesNotMatch(bare, /signal|ptrace/, 'no rules the kernel does not mediate');
  assert.doesNotMatch(bare, /^abi /m, 'no ABI a parser before 3.0 would not know');
  if (!needs(t, { commands: ['apparmor_parser'] })) return;
  // -Q: compile only, so this runs where AppArmor is off too.
  for (const text of [full, bare]) {
    const r = await runCommand(which('apparmor_parser')!, ['-Q', '-K', '-S'], { input: text, timeoutMs: 60_000 });
    assert.equal(r.code, 0, `apparmor_parser refused the profile: ${r.stderr}`);
  }
});

test('start-up: the default profile is loaded when missing or changed, and only then', async (t) => {
  const state = mkdtempSync(join(tmpdir(), 'skiff-apparmor-'));
  t.after(() => rmSync(state, { recursive: true, force: true }));
  const log = createLogger('error', () => {});
  const host = fakeHost(true);
  const first = await openAppArmor(state, log, host);
  assert.deepEqual(first.status, { enabled: true, defaultProfile: 'skiffd-default' });
  assert.equal(host.loads.length, 1);
  await openAppArmor(state, log, host);
  assert.equal(host.loads.length, 1, 'loaded already, with this text: not again');
  writeFileSync(join(state, 'apparmor-default.sha256'), 'an older text\n');
  await openAppArmor(state, log, host);
  assert.equal(host.loads.length, 2, 'another text of the profile is replaced');
  const off = await openAppArmor(state, log, fakeHost(false));
  assert.deepEqual(off.status, { enabled: false });
  const broken = { ...fakeHost(true), load: async () => Promise.reject(new Error('apparmor_parser not found')) };
  await assert.rejects(
    openAppArmor(mkdtempSync(join(state, 'x')), log, broken),
    /cannot load the default AppArmor profile skiffd-default: apparmor_parser not found/,
  );
});

test('this host: AppArmor read from securityfs', () => {
  const host = appArmorHost();
  let enabled = '';
  try {
    enabled = readFileSync('/sys/module/apparmor/parameters/enabled', 'utf8').trim();
  } catch {}
  assert.equal(host.enabled, enabled === 'Y');
  assert.equal(host.parserAbi3, existsSync('/etc/apparmor.d/abi/3.0'));
});

test('CreateContainer: the profile lands in the OCI spec; refused where AppArmor is off', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const on = await startRuncContainers(t, { apparmor: { host: fakeHost(true, ['skiffd-default', 'custom']), defaultProfile: DEFAULT_PROFILE_NAME } });
  const spec = async (security: SecurityInput, name: string) => {
    const id = await on.manager.create({
      podSandboxId: on.pod.id,
      config: ContainerConfig.fromPartial({ metadata: { name, attempt: 0 }, image: { image: 'busybox' }, linux: { securityContext: security } }),
      sandboxConfig: undefined,
    });
    const config = JSON.parse(readFileSync(join(dirname(on.state), 'root', 'containers', id, 'bundle', 'config.json'), 'utf8'));
    return config.process.apparmorProfile as string | undefined;
  };
  assert.equal(await spec({}, 'none'), 'skiffd-default');
  assert.equal(await spec({ apparmor: localhost('custom') }, 'custom'), 'custom');
  assert.equal(await spec({ apparmor: { profileType: SecurityProfile_ProfileType.Unconfined } }, 'unconfined'), undefined);

  const off = await startRuncContainers(t, { apparmor: { host: fakeHost(false), defaultProfile: DEFAULT_PROFILE_NAME } });
  await assert.rejects(
    off.manager.create({
      podSandboxId: off.pod.id,
      config: ContainerConfig.fromPartial({
        metadata: { name: 'wants-default', attempt: 0 },
        image: { image: 'busybox' },
        linux: { securityContext: { apparmor: { profileType: SecurityProfile_ProfileType.RuntimeDefault } } },
      }),
      sandboxConfig: undefined,
    }),
    (err: { code: Status; details: string }) => err.code === Status.FAILED_PRECONDITION && /AppArmor is not enabled on this node/.test(err.details),
  );
  assert.equal((await off.manager.list()).length, 0, 'nothing was left of the refused container');
});
