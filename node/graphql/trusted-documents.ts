// The Node server's trusted documents: the manifest file TRUSTED_DOCUMENTS names, read and checked
// once at start, so a missing or malformed file stops the server with its name rather than failing
// requests later.
import { readFileSync } from 'node:fs';
import { trustedDocumentSet, type TrustedDocumentManifest } from '../../src/handler/trusted-documents.ts';
import { ConfigError } from './config.ts';

/** The manifest at `path` (Apollo's or Relay's format); throws a ConfigError saying what is wrong. */
export function readTrustedDocuments(path: string): { manifest: TrustedDocumentManifest; count: number } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError('TRUSTED_DOCUMENTS', `names a file that cannot be read: ${(error as Error).message}`);
  }
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch (error) {
    throw new ConfigError('TRUSTED_DOCUMENTS', `names a file that is not JSON (${path}): ${(error as Error).message}`);
  }
  try {
    return { manifest: manifest as TrustedDocumentManifest, count: trustedDocumentSet(manifest).byId.size };
  } catch (error) {
    throw new ConfigError('TRUSTED_DOCUMENTS', `(${path}): ${(error as Error).message}`);
  }
}
