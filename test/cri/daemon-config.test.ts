// skiffd's config file and flags: typed defaults, flag precedence, registry settings, and every
// kind of mistake answered with a message that names the key or flag to fix (exit code 2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, KEYS, loadConfig, parseConfig } from '../../node/skiffd/config.ts';
import { parseCli } from '../../node/skiffd/cli.ts';
import { STATE_ENTRIES } from '../../node/skiffd/state-dir.ts';
import { runSkiffd, startSkiffd } from '../support/skiffd.ts';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${err}`);
    return err.message;
  }
  assert.fail('expected a ConfigError');
}

test('defaults match the documented ones', () => {
  const c = parseConfig('');
  assert.equal(c.listen, 'unix:///run/skiffd/skiffd.sock');
  assert.equal(c.socketPath, '/run/skiffd/skiffd.sock');
  assert.equal(c.root, '/var/lib/skiffd');
  assert.equal(c.state, '/run/skiffd');
  assert.equal(c.logLevel, 'info');
  const runc = { name: 'runc', runtimePath: 'runc', runtimeRoot: '/run/skiffd/runc', runtimeType: 'oci' };
  assert.deepEqual(c.runtime, {
    defaultRuntime: 'runc',
    handlers: { runc },
    runtimePath: 'runc',
    runtimeRoot: '/run/skiffd/runc',
    conmonPath: 'conmon',
    cgroupDriver: 'auto',
  });
  assert.deepEqual(c.cni, { confDir: '/etc/cni/net.d', binDirs: ['/usr/lib/cni'] });
  assert.deepEqual(c.streaming, { address: '127.0.0.1', port: 0 });
  assert.deepEqual(c.registry, { configPath: '/etc/skiffd/certs.d', pullProgressTimeoutMs: 30_000, mirrors: {}, configs: {} });
  // containerd 2's NRI defaults: on, its socket and directories, 5 s to register, 2 s per request.
  assert.deepEqual(c.nri, {
    enable: true,
    socketPath: '/var/run/nri/nri.sock',
    pluginPath: '/opt/nri/plugins',
    pluginConfigPath: '/etc/nri/conf.d',
    registrationTimeoutMs: 5_000,
    requestTimeoutMs: 2_000,
    disableConnections: false,
  });
  assert.equal(parseConfig('[nri]\ndisable = true\nplugin_request_timeout = "1500ms"\ndisable_connections = true\n').nri.requestTimeoutMs, 1_500);
  assert.equal(parseConfig('[nri]\ndisable = true\n').nri.enable, false);
});

test('a full file parses into the typed config; flags override it', () => {
  const toml = `
listen = "unix:///tmp/x/skiffd.sock"
root = "/data/skiffd"
state = "/run/other"
log_level = "warn"
[runtime]
runtime_path = "/usr/sbin/runc"
conmon_path = "/usr/bin/conmon"
cgroup_driver = "systemd"
[cni]
conf_dir = "/opt/cni/conf"
bin_dir = ["/opt/cni/bin", "/usr/lib/cni"]
[streaming]
address = "::1"
port = 10010
[registry.mirrors."registry.k8s.io"]
endpoints = ["http://127.0.0.1:5000", "https://mirror.example"]
[registry.mirrors."docker.io"]
endpoints = ["http://127.0.0.1:5001"]
[registry.configs."127.0.0.1:5000"]
insecure = true
[registry.configs."private.example"]
username = "me"
password = "secret"
[registry.configs."tokens.example"]
identity_token = "refresh"
auth = "bWU6c2VjcmV0"
[registry.configs."corp.example".tls]
ca_file = "/etc/pki/corp-ca.pem"
cert_file = "/etc/pki/node.pem"
key_file = "/etc/pki/node.key"
insecure_skip_verify = false
[registry]
config_path = "/etc/containerd/certs.d/"
pull_progress_timeout = "5m"
max_artifact_size = 1073741824
`;
  const c = parseConfig(toml);
  assert.equal(c.socketPath, '/tmp/x/skiffd.sock');
  assert.equal(c.root, '/data/skiffd');
  assert.equal(c.logLevel, 'warn');
  assert.deepEqual(c.runtime, {
    defaultRuntime: 'runc',
    handlers: { runc: { name: 'runc', runtimePath: '/usr/sbin/runc', runtimeRoot: '/run/other/runc', runtimeType: 'oci' } },
    runtimePath: '/usr/sbin/runc',
    runtimeRoot: '/run/other/runc',
    conmonPath: '/usr/bin/conmon',
    cgroupDriver: 'systemd',
  });
  assert.deepEqual(c.cni, { confDir: '/opt/cni/conf', binDirs: ['/opt/cni/bin', '/usr/lib/cni'] });
  assert.deepEqual(c.streaming, { address: '::1', port: 10010 });
  assert.deepEqual(c.registry, {
    configPath: '/etc/containerd/certs.d',
    pullProgressTimeoutMs: 300_000,
    maxArtifactBytes: 1_073_741_824,
    mirrors: { 'registry.k8s.io': { endpoints: ['http://127.0.0.1:5000', 'https://mirror.example'] }, 'docker.io': { endpoints: ['http://127.0.0.1:5001'] } },
    configs: {
      '127.0.0.1:5000': { insecure: true },
      'private.example': { username: 'me', password: 'secret' },
      'tokens.example': { identityToken: 'refresh', auth: 'bWU6c2VjcmV0' },
      'corp.example': { tls: { caFile: '/etc/pki/corp-ca.pem', certFile: '/etc/pki/node.pem', keyFile: '/etc/pki/node.key', insecureSkipVerify: false } },
    },
  });

  const o = parseConfig(toml, { overrides: { listen: 'rel/s.sock', root: './data', state: '/st', log_level: 'debug' }, cwd: '/home/op' });
  assert.equal(o.socketPath, '/home/op/rel/s.sock');
  assert.equal(o.root, '/home/op/data');
  assert.equal(o.state, '/st');
  assert.equal(o.runtime.runtimeRoot, '/st/runc', 'runtime_root follows the overridden state dir');
  assert.equal(o.logLevel, 'debug');
  assert.equal(parseConfig('[cni]\nbin_dir = "/one"').cni.binDirs[0], '/one', 'bin_dir also takes a single string');
});

test('runtime handlers: [runtimes.NAME] tables, the default one by [runtime] default_runtime or made from runtime_path', () => {
  const c = parseConfig('[runtimes.runc]\n[runtimes.crun]\n[runtimes.gvisor]\nruntime_path = "/usr/bin/runsc"\nruntime_root = "/run/runsc"\n', {
    overrides: { state: '/st' },
  });
  assert.deepEqual(c.runtime.handlers, {
    runc: { name: 'runc', runtimePath: 'runc', runtimeRoot: '/st/runc', runtimeType: 'oci' },
    crun: { name: 'crun', runtimePath: 'crun', runtimeRoot: '/st/crun', runtimeType: 'oci' },
    gvisor: { name: 'gvisor', runtimePath: '/usr/bin/runsc', runtimeRoot: '/run/runsc', runtimeType: 'oci' },
  });
  assert.equal(c.runtime.defaultRuntime, 'runc');
  const crunFirst = parseConfig('[runtime]\ndefault_runtime = "crun"\n[runtimes.crun]\n');
  assert.deepEqual([crunFirst.runtime.runtimePath, Object.keys(crunFirst.runtime.handlers)], ['crun', ['crun']]);
  // [runtime] runtime_path alone still sets the default handler's binary; [runtimes] adds to it.
  const legacy = parseConfig('[runtime]\nruntime_path = "/opt/runc"\n[runtimes.crun]\n');
  assert.deepEqual(Object.keys(legacy.runtime.handlers).sort(), ['crun', 'runc']);
  assert.equal(legacy.runtime.handlers.runc.runtimePath, '/opt/runc');
});

test("a runtime root on skiffd's own state, or on another handler's root or exec directory, is refused", () => {
  const refused = (toml: string) => configError(() => parseConfig(toml, { configFile: '/etc/x.toml', overrides: { state: '/st', listen: '/st/skiffd.sock' } }));
  // A handler named after one of skiffd's own entries would take its default root, <state>/NAME, over.
  for (const [toml, name, path] of [
    ['[runtimes.pods]', 'pods', '/st/pods'],
    ['[runtimes.exits]', 'exits', '/st/exits'],
    ['[runtimes.attach]', 'attach', '/st/attach'],
    ['[runtimes.idmap]', 'idmap', '/st/idmap'],
  ]) {
    assert.match(
      refused(toml),
      new RegExp(
        `^config file /etc/x\\.toml: runtime handler "${name}": its runtime root ${path} collides with skiffd's own state entry ${path}; give it a runtime root of its own \\(\\[runtimes\\.${name}\\] runtime_root = "/SOME/DIR"\\)$`,
      ),
    );
  }
  // Every entry, as an explicit root or below one; the socket; the state directory's parent.
  for (const entry of Object.values(STATE_ENTRIES)) {
    assert.match(
      refused(`[runtimes.x]\nruntime_root = "/st/${entry}"`),
      new RegExp(`"x": its runtime root /st/${entry.replace('.', '\\.')} collides with skiffd's own state entry`),
    );
    assert.match(refused(`[runtimes.x]\nruntime_root = "/st/${entry}/x"`), /"x": its runtime root .* collides with skiffd's own state entry/);
  }
  assert.match(
    refused('[runtimes.x]\nruntime_root = "/st/skiffd.sock"'),
    /"x": its runtime root \/st\/skiffd\.sock collides with skiffd's own socket \/st\/skiffd\.sock/,
  );
  assert.match(refused('[runtimes.x]\nruntime_root = "/"'), /"x": its runtime root \/ holds skiffd's state directory \/st/);
  // The default handler made from [runtime]'s shorthand is fixed there.
  assert.match(refused('[runtime]\ndefault_runtime = "pods"'), /"pods": its runtime root \/st\/pods .*\(\[runtime\] runtime_root = "\/SOME\/DIR"\)$/);
  // foo's exec directory is <root>-exec, where a handler named foo-exec would keep its containers.
  for (const toml of ['[runtimes.foo]\n[runtimes.foo-exec]', '[runtimes.foo-exec]\n[runtimes.foo]']) {
    assert.match(
      refused(toml),
      /runtime handler "foo-exec": its runtime root \/st\/foo-exec collides with the exec directory of "foo" \(beside its runtime root\), \/st\/foo-exec; give it a runtime root of its own \(\[runtimes\.foo-exec\] runtime_root = "\/SOME\/DIR"\)$/,
    );
  }
  assert.match(
    refused('[runtimes.x]\nruntime_root = "/st/runc/x"'),
    /"x": its runtime root \/st\/runc\/x collides with the runtime root of "runc", \/st\/runc/,
  );
  assert.match(
    refused('[runtimes.x]\nruntime_root = "/st/runc-exec/x"'),
    /"x": its runtime root \/st\/runc-exec\/x collides with the exec directory of "runc"/,
  );
  // What does not collide stays as it was: runc in <state>/runc, a handler's root beside it or elsewhere.
  const fine = parseConfig('[runtimes.runc]\n[runtimes.crun]\n[runtimes.runc-alt]\n[runtimes.gvisor]\nruntime_root = "/run/runsc"', {
    overrides: { state: '/st' },
  });
  assert.deepEqual(
    Object.values(fine.runtime.handlers).map((h) => h.runtimeRoot),
    ['/st/runc', '/st/crun', '/st/runc-alt', '/run/runsc'],
  );
});

test('every entry the daemon makes directly under its state directory is one a runtime root may not take', () => {
  // A new `join(...state, 'NAME')` in a store is a new entry of skiffd's: it belongs in STATE_ENTRIES.
  const dir = join(import.meta.dirname, '..', '..', 'node', 'skiffd');
  const literals: string[] = [];
  let joins = 0;
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((n) => n.endsWith('.ts'))) {
    const text = readFileSync(join(dir, name), 'utf8');
    for (const m of text.matchAll(/\bjoin\(\s*(?:[\w.]+\.)?state\s*,\s*([^,)]+)/g)) {
      joins++;
      const literal = m[1].trim().match(/^['"`]([^'"`]+)['"`]$/);
      if (literal) literals.push(`${name}: ${literal[1]}`);
      else
        assert.match(m[1].trim(), /^(STATE_ENTRIES\.\w+|RUNTIME_CONFIG_FILE|name|o\.defaultRuntime)$/, `${name} joins ${m[1].trim()} onto the state directory`);
    }
  }
  assert.ok(joins >= 6, `the scan found the stores' joins (${joins})`);
  assert.deepEqual(
    literals.filter((l) => !(Object.values(STATE_ENTRIES) as string[]).includes(l.split(': ')[1])),
    [],
    'entries not in STATE_ENTRIES',
  );
  // A runtime's exec directory sits beside its root, as runtime-handlers-config.ts assumes.
  assert.match(readFileSync(join(dir, 'oci', 'runc.ts'), 'utf8'), /new ExecHelper\(`\$\{this\.root\}-exec`\)/);
});

test('mistakes in the file name the key and what it accepts', () => {
  const cases: [string, RegExp][] = [
    [
      'lsiten = "x"',
      /unknown key "lsiten" \(known top-level keys: listen, root, state, log_level, log_format, \[runtime\], \[cni\], \[cdi\], \[streaming\], \[nri\], \[metrics\], \[runtimes\], \[registry\]\)/,
    ],
    ['[nri]\nplugin_request_timeout = 2', /nri\.plugin_request_timeout: expected a duration between 1ms and 24h such as "30s"/],
    ['[nri]\nsocket_path = "nri.sock"', /nri\.socket_path: expected an absolute path, got "nri\.sock"/],
    [
      '[nri]\nenable = true',
      /unknown key "nri\.enable" \(known keys in \[nri\]: disable, socket_path, plugin_path, plugin_config_path, plugin_registration_timeout, plugin_request_timeout, disable_connections\)/,
    ],
    ['[metrics]\naddress = "localhost:9"', /metrics\.address: expected IP:PORT, such as 127\.0\.0\.1:1338/],
    ['log_format = "xml"', /log_format: expected one of logfmt, json, got "xml"/],
    [
      '[runtime]\nruntime = "runc"',
      /unknown key "runtime\.runtime" \(known keys in \[runtime\]: default_runtime, runtime_path, runtime_root, conmon_path, cgroup_driver\)/,
    ],
    ['[runtimes.Crun]\nruntime_path = "crun"', /runtimes\."Crun": a handler name is a DNS label/],
    ['[runtimes.crun]\nbinary = "crun"', /unknown key "runtimes\."crun"\.binary" \(known keys: runtime_path, runtime_root, runtime_type\)/],
    ['[runtimes.kata]\nruntime_type = "io.containerd.kata.v2"', /runtimes\."kata"\.runtime_type: "io\.containerd\.kata\.v2" is not one of oci/],
    ['[runtimes.crun]\nruntime_root = "crun-state"', /runtimes\."crun"\.runtime_root: expected an absolute path/],
    ['[runtimes.a]\nruntime_root = "/x"\n[runtimes.b]\nruntime_root = "/x"', /runtimes "a" and "b" share the runtime root \/x/],
    ['[runtime]\nruntime_path = "runc"\n[runtimes.runc]\nruntime_path = "runc"', /the default handler "runc" is set twice/],
    ['[runtime]\ndefault_runtime = "Fast"', /runtime\.default_runtime: expected a runtime handler name/],
    ['[runtime]\ncgroup_driver = "cgroupv2"', /runtime\.cgroup_driver: expected one of auto, cgroupfs, systemd, got "cgroupv2"/],
    ['log_level = "verbose"', /log_level: expected one of debug, info, warn, error, got "verbose"/],
    ['root = "relative/dir"', /root: expected an absolute path, got "relative\/dir"/],
    ['root = 5', /root: expected a string, got 5/],
    ['listen = "tcp://127.0.0.1:1234"', /listen: expected a unix socket: unix:\/\/\/absolute\/path/],
    ['[streaming]\naddress = "localhost:10010"', /streaming\.address: expected an IP address such as 127\.0\.0\.1 or ::1, got "localhost:10010"/],
    ['[streaming]\nport = 70000', /streaming\.port: expected an integer port from 0 to 65535, got 70000/],
    ['[cni]\nbin_dir = []', /cni\.bin_dir: expected at least one directory/],
    ['runtime = "runc"', /"runtime" must be a table/],
    ['listen = ', /invalid TOML at line 1, column \d+: /],
    ['root = "/r"\n[runtime]\nruntime_path = "runc\ncgroup_driver = "systemd"', /invalid TOML at line 3, column \d+: /],
    ['[registry.mirrors."docker.io"]\nendpoint = ["http://x"]', /registry\.mirrors\."docker\.io": unknown key "endpoint" \(known: endpoints\)/],
    ['[registry.mirrors."docker.io"]\nendpoints = ["ftp://x"]', /"ftp:\/\/x" must use http:\/\/ or https:\/\//],
    ['[registry.mirrors."docker.io"]\nendpoints = ["not a url"]', /"not a url" is not a URL/],
    ['[registry.configs."h.example"]\ninsecure = "yes"', /registry\.configs\."h\.example"\.insecure: expected true or false, got "yes"/],
    ['[registry.configs."h.example"]\ntlz = true', /unknown key "tlz" \(known: insecure, username, password, auth, identity_token, tls\)/],
    ['[registry.configs."h.example"]\ntls = true', /registry\.configs\."h\.example"\.tls: expected a table/],
    ['[registry.configs."h.example".tls]\nca_file = "ca.pem"', /registry\.configs\."h\.example"\.tls\.ca_file: expected an absolute path, got "ca\.pem"/],
    ['[registry.configs."h.example".tls]\nca = "/ca.pem"', /unknown key "ca" \(known: ca_file, cert_file, key_file, insecure_skip_verify\)/],
    ['[registry.configs."h.example".tls]\ncert_file = "/c.pem"', /tls: cert_file and key_file go together/],
    ['[registry.configs."h.example".tls]\ninsecure_skip_verify = 1', /tls\.insecure_skip_verify: expected true or false, got 1/],
    ['[registry.configs."h.example"]\npassword = "p"', /password is set without username/],
    ['[registry.configs."bad host!"]\ninsecure = true', /"bad host!" is not a registry host/],
    ['[registry.auths."x"]\ny = 1', /unknown key "registry\.auths"/],
    ['[registry]\nconfig_path = "certs.d"', /registry\.config_path: expected an absolute directory path, got "certs\.d"/],
    ['[registry]\npull_progress_timeout = 30', /registry\.pull_progress_timeout: expected a duration between 1ms and 24h such as "30s"/],
    ['[registry]\npull_progress_timeout = "5 minutes"', /registry\.pull_progress_timeout: expected a duration/],
    ['[registry]\npull_progress_timeout = "0s"', /registry\.pull_progress_timeout: expected a duration/],
    ['[registry]\nmax_artifact_size = "1G"', /registry\.max_artifact_size: expected a positive integer number of bytes, got "1G"/],
    ['[registry]\nmax_artifact_size = 0', /registry\.max_artifact_size: expected a positive integer number of bytes, got 0/],
  ];
  for (const [toml, expected] of cases) {
    const message = configError(() => parseConfig(toml, { configFile: '/etc/x.toml' }));
    assert.match(message, /^config file \/etc\/x\.toml: /, message);
    assert.match(message, expected, `for ${JSON.stringify(toml)}`);
  }
  assert.match(
    configError(() => parseConfig('', { overrides: { log_level: 'loud' } })),
    /^--log-level "loud": expected one of debug, info, warn, error$/,
  );
});

test('flags: unknown ones and missing values are errors; --flag=value works', () => {
  assert.deepEqual(parseCli(['--root=/r', '--state', '/s', '--config', 'c.toml']), {
    help: false,
    version: false,
    configFile: 'c.toml',
    overrides: { root: '/r', state: '/s' },
  });
  assert.match(
    configError(() => parseCli(['--roots', '/r'])),
    /unknown flag "--roots" \(known flags: --config, --listen, --root, --state, --log-level, --log-format, --help, --version\)/,
  );
  assert.match(
    configError(() => parseCli(['--root'])),
    /flag --root needs a value/,
  );
  assert.match(
    configError(() => parseCli(['serve'])),
    /unexpected argument "serve"/,
  );
});

test('a missing explicit --config is an error; a missing default file is fine', () => {
  assert.match(
    configError(() => loadConfig({ configFile: '/nonexistent/skiffd.toml' })),
    /cannot read config file \/nonexistent\/skiffd\.toml: no such file/,
  );
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-default-'));
  try {
    const defaultConfigFile = join(dir, 'config.toml');
    assert.equal(loadConfig({ defaultConfigFile }).configFile, undefined);
    writeFileSync(defaultConfigFile, 'log_level = "debug"\n');
    const found = loadConfig({ defaultConfigFile });
    assert.deepEqual([found.configFile, found.logLevel], [defaultConfigFile, 'debug']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the binary: --help documents every flag and key, --version, bad config exits 2', async (t) => {
  const help = await runSkiffd(['--help']);
  assert.equal(help.code, 0);
  for (const flag of ['--config', '--listen', '--root', '--state', '--log-level', '--log-format', '--help', '--version'])
    assert.ok(help.stdout.includes(flag), `--help lacks ${flag}`);
  for (const key of KEYS) assert.ok(help.stdout.includes(key.key), `--help lacks config key ${key.key}`);
  for (const key of [
    'registry.mirrors."HOST".endpoints',
    'registry.configs."HOST".insecure',
    'registry.configs."HOST".username',
    'registry.configs."HOST".password',
    'registry.configs."HOST".tls.ca_file',
    'registry.configs."HOST".tls.cert_file',
    'registry.configs."HOST".tls.key_file',
    'registry.configs."HOST".tls.insecure_skip_verify',
  ]) {
    assert.ok(help.stdout.includes(key), `--help lacks ${key}`);
  }

  const version = await runSkiffd(['--version']);
  assert.equal(version.code, 0);
  assert.match(version.stdout, new RegExp(`^skiffd ${pkg.version.replace(/\./g, '\\.')} `));

  const dir = mkdtempSync(join(tmpdir(), 'skiffd-cfg-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'bad.toml');
  writeFileSync(file, '[runtime]\ncgroup_driver = "none"\n');
  const bad = await runSkiffd(['--config', file]);
  assert.equal(bad.code, 2);
  assert.equal(bad.stderr, `skiffd: config file ${file}: runtime.cgroup_driver: expected one of auto, cgroupfs, systemd, got "none"\n`);

  const missing = await runSkiffd(['--config', join(dir, 'nope.toml')]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read config file .*nope\.toml: no such file/);

  const toml = join(dir, 'broken.toml');
  writeFileSync(toml, 'log_level = "info"\n[cni\nconf_dir = "/x"\n');
  const broken = await runSkiffd(['--config', toml]);
  assert.equal(broken.code, 2);
  assert.match(broken.stderr, new RegExp(`^skiffd: config file ${toml.replace(/[.]/g, '\\.')}: invalid TOML at line 2, column \\d+: `));

  const flag = await runSkiffd(['--log-level', 'chatty']);
  assert.equal(flag.code, 2);
  assert.match(flag.stderr, /--log-level "chatty": expected one of debug, info, warn, error/);
});

test('--log-format json: every line the daemon writes is one JSON object with time, level and msg', async (t) => {
  const d = await startSkiffd({ args: ['--log-format', 'json'] });
  t.after(() => d.cleanup());
  await d.runtime.version({});
  assert.deepEqual(await d.stop(), { code: 0, signal: null });
  const lines = d.logs().split('\n').filter(Boolean);
  assert.ok(lines.length >= 3, d.logs());
  for (const line of lines) {
    const record = JSON.parse(line) as Record<string, unknown>;
    assert.match(String(record.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, line);
    assert.ok(['debug', 'info', 'warn', 'error'].includes(String(record.level)), line);
    assert.equal(typeof record.msg, 'string', line);
  }
  const serving = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r.msg === 'serving');
  assert.equal(serving?.socket, d.socket, 'fields keep their names and values');
});
