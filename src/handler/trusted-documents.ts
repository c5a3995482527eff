// Trusted documents (persisted documents used as an allow-list): the operations a client build
// registered, in a manifest the server holds, run by their id; with `freeform` other than 'allowed',
// nothing else does. Ids come as `documentId` (the GraphQL-over-HTTP draft's persisted documents) or
// as Apollo's `extensions.persistedQuery.sha256Hash`. The manifest is an object, so every runtime
// takes it the same way: the Node server reads a file at start, an edge build imports the JSON.
import { MalformedRequestError, RefusalError } from './request-errors.ts';
import type { QueryResolver } from './persisted-queries.ts';

/**
 * `@apollo/generate-persisted-query-manifest`'s output (`persisted-query-manifest.json`): `format`
 * is "apollo-persisted-query-manifest" and `version` 1, checked when the handler is made (typed
 * loosely so an imported JSON file fits as it is).
 */
export interface ApolloPersistedQueryManifest {
  format: string;
  version: number;
  operations: readonly { id: string; name?: string; type?: string; body: string }[];
}

/** Relay's `persisted_queries.json`: document ids (MD5 by default) to document text. */
export type RelayPersistedQueries = Readonly<Record<string, string>>;

export type TrustedDocumentManifest = ApolloPersistedQueryManifest | RelayPersistedQueries;

/**
 * What a request with document text instead of an id may run. `'refused'`: nothing (400
 * PERSISTED_QUERY_ID_REQUIRED); `'listed'`: only a text that is in the manifest, byte for byte (403
 * QUERY_NOT_IN_SAFELIST otherwise); `'allowed'`: anything, and automatic persisted queries register
 * as before. A function decides per request (true: allowed, false: refused).
 */
export type FreeformOperations = 'refused' | 'listed' | 'allowed' | ((request: Request) => boolean);

export interface TrustedDocumentsOptions {
  /** One manifest, or several (one per client app); an id listed twice must name the same text. */
  manifest: TrustedDocumentManifest | readonly TrustedDocumentManifest[];
  /** Default `'refused'`, or `'allowed'` with `development` (so GraphiQL runs anything while developing). */
  freeform?: FreeformOperations;
}

export const freeformModes = ['refused', 'listed', 'allowed'] as const;

/** The documents of one or more manifests, by id, and their texts. */
export interface TrustedDocumentSet {
  byId: ReadonlyMap<string, string>;
  texts: ReadonlySet<string>;
}

/** Reads manifests in either format; throws a TypeError saying what is wrong with one that is neither. */
export function trustedDocumentSet(manifest: unknown): TrustedDocumentSet {
  const byId = new Map<string, string>();
  const add = (id: unknown, text: unknown, where: string) => {
    if (typeof id !== 'string' || id === '') throw new TypeError(`trustedDocuments: ${where} has no id (a non-empty string)`);
    if (typeof text !== 'string' || text === '') throw new TypeError(`trustedDocuments: ${where} (id "${id}") has no document text`);
    const known = byId.get(id);
    if (known !== undefined && known !== text) throw new TypeError(`trustedDocuments: id "${id}" names two different documents`);
    byId.set(id, text);
  };
  const manifests = Array.isArray(manifest) ? manifest : [manifest];
  if (manifests.length === 0) throw new TypeError('trustedDocuments.manifest: no manifest given');
  manifests.forEach((one: unknown, index) => {
    const name = manifests.length === 1 ? 'the manifest' : `manifest ${index}`;
    if (typeof one !== 'object' || one === null || Array.isArray(one)) {
      throw new TypeError(`trustedDocuments: ${name} must be an object (Apollo's persisted query manifest or Relay's persisted_queries.json)`);
    }
    const record = one as Record<string, unknown>;
    if ('format' in record || 'operations' in record) {
      if (record.format !== 'apollo-persisted-query-manifest' || record.version !== 1 || !Array.isArray(record.operations)) {
        throw new TypeError(
          `trustedDocuments: ${name} is not an Apollo persisted query manifest (format "apollo-persisted-query-manifest", version 1, operations [...])`,
        );
      }
      record.operations.forEach((operation: unknown, at) => {
        const { id, body } = (typeof operation === 'object' && operation !== null ? operation : {}) as { id?: unknown; body?: unknown };
        add(id, body, `${name}, operation ${at}`);
      });
    } else {
      for (const [id, text] of Object.entries(record)) add(id, text, `${name}, entry "${id}"`);
    }
  });
  return { byId, texts: new Set(byId.values()) };
}

// The draft's document identifier: unreserved URI characters and colons.
const documentIdSyntax = /^[A-Za-z0-9\-._~:]+$/;
const sha256Prefix = 'sha256:';

/**
 * Resolves the document of a request from the trusted set, then hands everything else (automatic
 * persisted queries, plain queries) to `next` where `freeform` lets it through.
 */
export function createTrustedDocumentResolver(options: TrustedDocumentsOptions, development: boolean, next: QueryResolver): QueryResolver {
  const { byId, texts } = trustedDocumentSet(options.manifest);
  const freeform = options.freeform ?? (development ? 'allowed' : 'refused');
  if (typeof freeform !== 'function' && !freeformModes.includes(freeform)) {
    throw new TypeError(`trustedDocuments.freeform must be one of ${freeformModes.join(', ')} or a function (got ${JSON.stringify(freeform)})`);
  }
  const freeformFor = (request: Request): 'refused' | 'listed' | 'allowed' =>
    typeof freeform === 'function' ? (freeform(request) ? 'allowed' : 'refused') : freeform;

  const find = (id: string): string | undefined => {
    const text = byId.get(id);
    if (text !== undefined) return text;
    // A draft SHA-256 identifier finds an Apollo manifest's id (the bare hex), and the other way round.
    if (id.startsWith(sha256Prefix)) return byId.get(id.slice(sha256Prefix.length).toLowerCase());
    return byId.get(sha256Prefix + id.toLowerCase()) ?? byId.get(id.toLowerCase());
  };

  return (query, extensions, documentId, request) => {
    if (documentId != null && documentId !== '') {
      if (typeof documentId !== 'string' || !documentIdSyntax.test(documentId)) {
        throw new MalformedRequestError('Invalid documentId: it must be a string of letters, digits, "-", ".", "_", "~" and ":"');
      }
      if (query != null) {
        throw new RefusalError('Send either documentId or query, not both', 400, { extensions: { code: 'CANNOT_SEND_PQ_ID_AND_BODY' } });
      }
      return find(documentId) ?? notInList(documentId);
    }
    const hash = persistedQueryHashOf(extensions);
    if (query == null && hash !== undefined) {
      const text = find(hash);
      if (text !== undefined) return text;
      // Where freeform operations run, automatic persisted queries still register unknown hashes.
      return freeformFor(request) === 'allowed' ? next(query, extensions, documentId, request) : notInList(hash);
    }
    if (query == null) return next(query, extensions, documentId, request); // reported as a missing query
    switch (freeformFor(request)) {
      case 'allowed':
        return next(query, extensions, documentId, request);
      case 'listed':
        if (typeof query === 'string' && texts.has(query)) return query;
        throw new RefusalError('The operation is not one of the trusted documents', 403, { extensions: { code: 'QUERY_NOT_IN_SAFELIST' } });
      case 'refused':
        throw new RefusalError(
          'Only trusted documents run here: send the document id as documentId (or extensions.persistedQuery.sha256Hash), not its text',
          400,
          {
            extensions: { code: 'PERSISTED_QUERY_ID_REQUIRED' },
          },
        );
    }
  };
}

function notInList(id: string): never {
  const named = id.length <= 128 && documentIdSyntax.test(id) ? ` the id "${id}"` : ' this id';
  throw new RefusalError(`No trusted document has${named}`, 404, { extensions: { code: 'PERSISTED_QUERY_NOT_IN_LIST' } });
}

function persistedQueryHashOf(extensions: unknown): string | undefined {
  if (typeof extensions !== 'object' || extensions === null) return undefined;
  const persisted = (extensions as Record<string, unknown>).persistedQuery;
  if (typeof persisted !== 'object' || persisted === null) return undefined;
  const hash = (persisted as Record<string, unknown>).sha256Hash;
  return typeof hash === 'string' && hash !== '' ? hash : undefined;
}
