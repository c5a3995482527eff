// Which manifests are OCI artifacts, and how an artifact's layers become the files of a volume.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { artifactLayout } from '../../node/skiffd/images/artifact-layout.ts';
import { parseManifestDoc, type Descriptor } from '../../node/skiffd/images/manifest.ts';

const D = (n: number) => `sha256:${String(n).repeat(64).slice(0, 64)}`;
const manifest = (extra: Record<string, unknown>, configType: string, layerType = 'application/octet-stream') =>
  Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: configType, digest: D(1), size: 2 },
      layers: [{ mediaType: layerType, digest: D(2), size: 3, annotations: { 'org.opencontainers.image.title': 'w.bin' } }],
      ...extra,
    }),
  );

test('an OCI manifest with an artifactType, or a config that is not an image config, is an artifact', () => {
  const typed = parseManifestDoc(manifest({ artifactType: 'application/vnd.example.model' }, 'application/vnd.oci.empty.v1+json'), '', 'x');
  assert.equal(typed.kind === 'manifest' && typed.artifactType, 'application/vnd.example.model');
  const custom = parseManifestDoc(manifest({}, 'application/vnd.example.config.v1+json'), '', 'x');
  assert.equal(custom.kind === 'manifest' && custom.artifactType, 'application/vnd.example.config.v1+json');
  const withImageConfig = parseManifestDoc(manifest({ artifactType: 'application/vnd.example.model' }, 'application/vnd.oci.image.config.v1+json'), '', 'x');
  assert.equal(withImageConfig.kind === 'manifest' && withImageConfig.artifactType, 'application/vnd.example.model');
  const image = parseManifestDoc(manifest({}, 'application/vnd.oci.image.config.v1+json', 'application/vnd.oci.image.layer.v1.tar+gzip'), '', 'x');
  assert.equal(image.kind === 'manifest' && image.artifactType, undefined);
  // An image's layers are still checked; a Docker manifest cannot hold an artifact.
  assert.throws(
    () => parseManifestDoc(manifest({}, 'application/vnd.oci.image.config.v1+json'), '', 'x'),
    /unsupported layer media type application\/octet-stream/,
  );
  const docker = manifest({ mediaType: 'application/vnd.docker.distribution.manifest.v2+json' }, 'application/vnd.example.config.v1+json');
  assert.throws(() => parseManifestDoc(docker, '', 'x'), /only an OCI manifest can hold an artifact/);
});

test("an artifact's layers are files named by their titles (or ModelPack file paths), nameless ones left out; anything else is refused", () => {
  const layer = (n: number, title?: unknown): Descriptor => ({
    mediaType: 'application/octet-stream',
    digest: D(n),
    size: n,
    ...(title === undefined ? {} : { annotations: { 'org.opencontainers.image.title': title as string } }),
  });
  assert.deepEqual(artifactLayout([layer(1, 'weights.bin'), layer(2, 'config.json')]), {
    files: [
      { name: 'weights.bin', digest: D(1), size: 1 },
      { name: 'config.json', digest: D(2), size: 2 },
    ],
    unnamed: [],
  });
  // ModelPack's file path names a layer without a title; the title wins where both are set; a nameless layer is left out.
  const model = (n: number, annotations: Record<string, string>): Descriptor => ({
    mediaType: 'application/vnd.cncf.model.weight.v1.raw',
    digest: D(n),
    size: n,
    annotations,
  });
  assert.deepEqual(
    artifactLayout([
      model(1, { 'org.cncf.model.filepath': 'model.safetensors' }),
      model(2, { 'org.opencontainers.image.title': 't', 'org.cncf.model.filepath': 'f' }),
      layer(3),
    ]),
    {
      files: [
        { name: 'model.safetensors', digest: D(1), size: 1 },
        { name: 't', digest: D(2), size: 2 },
      ],
      unnamed: [`layer 2 (${D(3)}, application/octet-stream)`],
    },
  );
  const problem = (layers: Descriptor[]) => {
    const r = artifactLayout(layers);
    return 'problem' in r ? r.problem : '';
  };
  assert.match(problem([]), /no layers/);
  for (const nameless of [[layer(1)], [layer(1, '')], [layer(1, 7)], [layer(1), layer(2)]])
    assert.match(problem(nameless), /no layer has an org\.opencontainers\.image\.title or org\.cncf\.model\.filepath annotation/);
  for (const bad of ['..', '.', '../x', 'a/b', '/etc/passwd', 'a\0b', 'x'.repeat(256)]) assert.match(problem([layer(1, bad)]), /not a plain file name/, bad);
  assert.match(problem([layer(1, 'a'), layer(2, 'a')]), /layers 0 and 1 are both titled "a"/);
  // Two lone surrogates are two names here and one on disk (both become U+FFFD).
  assert.match(problem([layer(1, '\ud800'), layer(2, '\udc00')]), /not a plain file name/);
  assert.match(problem([1, 2, 3, 4, 5].map((n) => layer(n))), /layer 2 \(.*\); 2 more\)$/);
});
