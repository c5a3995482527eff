// The floor of the cold-start bench: a worker that loads nothing and answers a fixed string.
export default {
  fetch(): Response {
    return new Response('{"data":{}}', { headers: { 'content-type': 'application/json' } });
  },
};
