// GraphiQL for the Node dev server, served entirely from this process: the page's scripts and styles
// come from the graphiql, react, react-dom, graphql-ws and graphql-sse npm packages (plus
// graphiql-start.js), so it works with no network at all. Subscriptions run over graphql-ws when the
// server has WebSockets on the endpoint, else over server-sent events. The edge bundles leave GraphiQL
// out (its assets are about 1.8 MB).
import { createHash } from 'node:crypto';
import { loadAssetFiles } from './graphiql-assets.ts';

export interface GraphiQLOptions {
  /** Path of the GraphQL endpoint the page queries and is served on. Default `/graphql`. */
  endpoint?: string;
  /** Where the page's assets are served. Default `/graphiql`. */
  assetsPath?: string;
  /** Title of the page. Default `GraphiQL`. */
  title?: string;
  /** How the page subscribes: graphql-ws on the endpoint, or server-sent events. Default `websocket`. */
  subscriptions?: 'websocket' | 'sse';
}

interface Asset {
  body: Uint8Array<ArrayBuffer> | string;
  contentType: string;
  etag: string;
}

// Read on first use, then kept: the server serves them from memory.
let vendorAssets: Map<string, Asset> | undefined;

function vendor(): Map<string, Asset> {
  if (vendorAssets) return vendorAssets;
  const assets = new Map<string, Asset>();
  for (const { name, body, contentType } of loadAssetFiles()) {
    assets.set(name, { body, contentType, etag: strongEtag(body) });
  }
  vendorAssets = assets;
  return assets;
}

function strongEtag(data: Uint8Array | string): string {
  return `"${createHash('sha256').update(data).digest('base64url').slice(0, 32)}"`;
}

function attribute(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(options: Required<GraphiQLOptions>): string {
  const a = options.assetsPath;
  const title = attribute(options.title);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${a}/graphiql.min.css">
<style>html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
<div id="graphiql">Loading GraphiQL…</div>
<script src="${a}/react.production.min.js"></script>
<script src="${a}/react-dom.production.min.js"></script>
<script src="${a}/graphiql.min.js"></script>
<script src="${a}/${options.subscriptions === 'sse' ? 'graphql-sse' : 'graphql-ws'}.min.js"></script>
<script src="${a}/start.js" data-endpoint="${attribute(options.endpoint)}" data-subscriptions="${options.subscriptions}"></script>
</body>
</html>
`;
}

// Everything comes from this origin; the policy makes a browser refuse anything else.
const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** True when a GET asks for a page (a browser navigation), not a GraphQL response. */
export function wantsHtml(request: Request): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const accept = request.headers.get('accept');
  return accept !== null && /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept) && !/text\/html\s*;\s*q=0(\.0*)?\s*(,|$)/i.test(accept);
}

/**
 * Returns a responder for the GraphiQL page and its assets, or null for requests it does not serve:
 * the page on `GET endpoint` with `Accept: text/html`, the assets under `assetsPath`.
 */
export function createGraphiQL(options: GraphiQLOptions = {}): (request: Request) => Response | null {
  const resolved: Required<GraphiQLOptions> = {
    endpoint: options.endpoint ?? '/graphql',
    assetsPath: (options.assetsPath ?? '/graphiql').replace(/\/+$/, ''),
    title: options.title ?? 'GraphiQL',
    subscriptions: options.subscriptions ?? 'websocket',
  };
  const html = page(resolved);
  const pageEtag = strongEtag(html);
  vendor(); // fail at startup, not on the first page view, when the packages are missing

  return (request) => {
    const url = new URL(request.url);
    if (url.pathname === resolved.endpoint) {
      if (!wantsHtml(request)) return null;
      return answer(
        request,
        { body: html, contentType: 'text/html; charset=utf-8', etag: pageEtag },
        {
          'content-security-policy': contentSecurityPolicy,
          'cache-control': 'no-cache',
          vary: 'Accept',
        },
      );
    }
    if (!url.pathname.startsWith(`${resolved.assetsPath}/`)) return null;
    const name = url.pathname.slice(resolved.assetsPath.length + 1);
    const asset = vendor().get(name);
    if (asset === undefined) {
      return new Response(`No GraphiQL asset named "${name}"`, { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } });
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return new Response(`Method ${request.method} is not allowed: use GET`, { status: 405, headers: { allow: 'GET, HEAD' } });
    }
    return answer(request, asset, { 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });
  };
}

function answer(request: Request, asset: Asset, headers: Record<string, string>): Response {
  const common = { etag: asset.etag, ...headers };
  const ifNoneMatch = request.headers.get('if-none-match');
  if (ifNoneMatch?.split(',').some((tag) => tag.trim() === asset.etag || tag.trim() === '*')) {
    return new Response(null, { status: 304, headers: common });
  }
  return new Response(request.method === 'HEAD' ? null : asset.body, {
    status: 200,
    headers: { 'content-type': asset.contentType, ...common },
  });
}
