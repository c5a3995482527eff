// Registry authentication end to end: a docker-registry behind htpasswd basic auth and one behind
// token auth (with a test token server issuing signed JWTs), both serving the storage the open
// fixture registry was pushed to. Credentials come from the pull's AuthConfig or the config file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Status } from 'nice-grpc';
import { grpcError } from '../support/grpc.ts';
import { needs } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { startImageFixtures } from '../support/image-fixtures.ts';
import { startRegistry } from '../support/registry.ts';
import { startTokenServer } from '../support/image-token-server.ts';

test('registry authentication: basic and bearer token', async (t) => {
  if (!needs(t, { root: true, commands: ['docker-registry', 'htpasswd', 'openssl', 'setfattr'] })) return;
  const storage = mkdtempSync(join(tmpdir(), 'skiff-registry-storage-'));
  t.after(() => rmSync(storage, { recursive: true, force: true }));
  const fx = await startImageFixtures(storage);
  t.after(() => fx.registry.stop());
  const basic = await startRegistry({ storageDir: storage, auth: { htpasswd: { users: { bob: 'builder' } } } });
  t.after(() => basic.stop());
  const tokens = await startTokenServer({ users: { alice: 'wonderland' }, refreshTokens: { 'refresh-for-alice': 'alice' } });
  t.after(() => tokens.stop());
  const guarded = await startRegistry({
    storageDir: storage,
    auth: { token: { realm: tokens.realm, service: tokens.service, issuer: tokens.issuer, rootCertBundle: tokens.certPath } },
  });
  t.after(() => guarded.stop());
  const B = `${basic.host}/test/private:v1`;
  const T = `${guarded.host}/test/private:v1`;
  const id = fx.priv.config.digest;

  const insecure = [`[registry.configs."${basic.host}"]`, 'insecure = true', `[registry.configs."${guarded.host}"]`, 'insecure = true'].join('\n');
  const d = await startSkiffd({ config: insecure });
  t.after(() => d.cleanup());
  const pull = (image: string, auth?: Record<string, string>) => d.images.pullImage({ image: { image }, auth });

  await t.test('basic auth without credentials: UNAUTHENTICATED naming where to put them', async () => {
    const err = await grpcError(pull(B));
    assert.equal(err.code, Status.UNAUTHENTICATED, err.details);
    assert.match(err.details, /username and password/);
    assert.ok(err.details.includes(`[registry.configs."${basic.host}"]`), err.details);
  });

  await t.test('basic auth with a wrong password: UNAUTHENTICATED', async () => {
    const err = await grpcError(pull(B, { username: 'bob', password: 'wrong' }));
    assert.equal(err.code, Status.UNAUTHENTICATED, err.details);
    assert.match(err.details, /rejected the credentials/);
  });

  await t.test('basic auth with AuthConfig username/password, and with AuthConfig.auth (base64)', async () => {
    assert.equal((await pull(B, { username: 'bob', password: 'builder' })).imageRef, id);
    await d.images.removeImage({ image: { image: id } });
    assert.equal((await pull(B, { auth: Buffer.from('bob:builder').toString('base64') })).imageRef, id);
  });

  await t.test('token auth without credentials: the anonymous token is refused, UNAUTHENTICATED', async () => {
    const err = await grpcError(pull(T));
    assert.equal(err.code, Status.UNAUTHENTICATED, err.details);
    assert.ok(tokens.counts.anonymous >= 1, 'the client asked the token server anonymously');
  });

  await t.test('token auth with bad credentials: UNAUTHENTICATED from the token server', async () => {
    const err = await grpcError(pull(T, { username: 'alice', password: 'nope' }));
    assert.equal(err.code, Status.UNAUTHENTICATED, err.details);
    assert.match(err.details, /token server/);
  });

  await t.test('token auth: AuthConfig username/password are traded for a bearer token', async () => {
    await d.images.removeImage({ image: { image: id } });
    const before = tokens.counts.password;
    assert.equal((await pull(T, { username: 'alice', password: 'wonderland' })).imageRef, id);
    assert.equal(tokens.counts.password, before + 1);
    const s = await d.images.imageStatus({ image: { image: T } });
    assert.deepEqual(s.image?.repoTags, [T]);
  });

  await t.test('token auth: an identity (refresh) token, and a ready registry token', async () => {
    const before = tokens.counts.refresh;
    assert.equal((await pull(T, { identityToken: 'refresh-for-alice' })).imageRef, id);
    assert.equal(tokens.counts.refresh, before + 1);
    const res = await fetch(`${tokens.realm}?service=${tokens.service}&scope=repository:test/private:pull`, {
      headers: { Authorization: 'Basic ' + Buffer.from('alice:wonderland').toString('base64') },
      signal: AbortSignal.timeout(5000),
    });
    const { token } = (await res.json()) as { token: string };
    assert.equal((await pull(T, { registryToken: token })).imageRef, id);
  });

  await t.test('credentials from the config file', async () => {
    const config = [
      `[registry.configs."${basic.host}"]`,
      'insecure = true',
      'username = "bob"',
      'password = "builder"',
      `[registry.configs."${guarded.host}"]`,
      'insecure = true',
      `auth = "${Buffer.from('alice:wonderland').toString('base64')}"`,
    ].join('\n');
    const d2 = await startSkiffd({ config });
    try {
      assert.equal((await d2.images.pullImage({ image: { image: B } })).imageRef, id);
      await d2.images.removeImage({ image: { image: id } });
      assert.equal((await d2.images.pullImage({ image: { image: T } })).imageRef, id);
      assert.equal((await d2.images.listImages({})).images.length, 1);
    } finally {
      await d2.cleanup();
    }
  });
});
