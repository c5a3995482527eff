/**
 * The path of an absolute URL, without query or fragment. Cheaper than `new URL()` on every request,
 * and a Request's url is always absolute.
 */
export function pathnameOf(url: string): string {
  const authority = url.indexOf('//');
  const start = url.indexOf('/', authority === -1 ? 0 : authority + 2);
  if (start === -1) return '/';
  let end = url.length;
  for (let i = start; i < end; i++) {
    const c = url.charCodeAt(i);
    if (c === 63 /* ? */ || c === 35 /* # */) end = i;
  }
  return url.slice(start, end);
}

/** The query string of an absolute URL, without the leading `?` and any fragment. */
export function searchOf(url: string): string {
  const start = url.indexOf('?');
  if (start === -1) return '';
  const hash = url.indexOf('#', start);
  return url.slice(start + 1, hash === -1 ? url.length : hash);
}
