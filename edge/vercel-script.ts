// Vercel's edge-runtime (`npx edge-runtime`, EdgeRuntime in tests) evaluates a script rather than a
// module and dispatches requests as `fetch` events; this entry is bundled as an IIFE for it.
import handler from './vercel.ts';

interface FetchEventLike extends Event {
  readonly request: Request;
  respondWith(response: Response | Promise<Response>): void;
}

addEventListener('fetch', (event) => {
  const fetchEvent = event as FetchEventLike;
  fetchEvent.respondWith(handler(fetchEvent.request));
});
