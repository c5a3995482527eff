// PullImage: pulls an image from its registry (or a configured mirror) into the store.
import type { PullImageRequest, PullImageResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { credentialsFrom } from '../../images/registry-config.ts';
import { requireImageName, withImageErrors } from './common.ts';
import { ImageError } from '../../images/errors.ts';

export const pullImage: UnaryRpc<PullImageRequest, PullImageResponse> = async (ctx, request) =>
  withImageErrors('PullImage', async () => {
    const name = requireImageName('PullImage', request.image?.image);
    const a = request.auth;
    let credentials;
    try {
      credentials = a
        ? credentialsFrom({ username: a.username, password: a.password, auth: a.auth, identityToken: a.identityToken, registryToken: a.registryToken })
        : undefined;
    } catch (err) {
      throw new ImageError('invalid-argument', `auth: ${(err as Error).message}`);
    }
    const images = ctx.images;
    if (/^sha256:[a-f0-9]{64}$/.test(name)) {
      // An image id names content we have, not something a registry can serve.
      const present = images.resolve(name);
      if (present) return { imageRef: present.id };
      throw new ImageError('invalid-argument', `"${name}" is an image id, not a reference: pull by name (repo:tag or repo@sha256:...)`);
    }
    try {
      const record = await images.pull(name, credentials);
      ctx.metrics?.pulled('ok', record.size);
      return { imageRef: record.id };
    } catch (err) {
      ctx.metrics?.pulled('error');
      throw err;
    }
  });
