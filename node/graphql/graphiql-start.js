// Mounts GraphiQL on the dev server's page (node/graphql/graphiql.ts serves it as /graphiql/start.js).
// A browser script, kept as a file of its own so the page's CSP can forbid inline scripts.
(() => {
  // The endpoint comes from the script tag, so this file is the same for every server.
  const { endpoint, subscriptions } = document.currentScript.dataset;
  // Subscriptions go over graphql-ws on the same URL when the server has WebSockets wired in, else
  // over server-sent events (graphql-sse's distinct connections) on the same URL.
  const wsUrl = new URL(endpoint, location.href);
  wsUrl.protocol = wsUrl.protocol === 'https:' ? 'wss:' : 'ws:';
  let wsClient;
  function subscribe(params, opts) {
    if (subscriptions === 'sse') {
      const client = graphqlSse.createClient({ url: endpoint, singleConnection: false, retryAttempts: 0, headers: () => opts?.headers ?? {} });
      return client.iterate(params);
    }
    wsClient = wsClient || graphqlWs.createClient({ url: wsUrl.href, lazy: true, connectionParams: () => opts?.headers ?? {} });
    return wsClient.iterate(params);
  }
  // Read from the query text itself: GraphiQL's parsed document can lag behind what was just typed.
  function isSubscription(params) {
    const text = String(params.query || '').replace(/"""[\s\S]*?"""|"(?:[^"\\\n]|\\.)*"|#[^\n\r]*/g, ' ');
    const operations = [];
    const tokens = /[{}]|\b(query|mutation|subscription|fragment)\b\s*([_A-Za-z][_0-9A-Za-z]*)?/g;
    let depth = 0;
    let named = false;
    for (let match; (match = tokens.exec(text)); ) {
      if (match[0] === '{') {
        if (depth === 0 && !named) operations.push({ kind: 'query' }); // the { ... } shorthand
        depth++;
        named = false;
      } else if (match[0] === '}') depth = Math.max(0, depth - 1);
      else if (depth === 0) {
        operations.push({ kind: match[1], name: match[2] });
        named = true;
      }
    }
    const candidates = operations.filter((o) => o.kind !== 'fragment');
    const chosen = params.operationName ? candidates.find((o) => o.name === params.operationName) : candidates[0];
    return chosen !== undefined && chosen.kind === 'subscription';
  }
  // GraphiQL passes the headers typed into its Headers tab as opts.headers.
  async function fetcher(params, opts) {
    if (isSubscription(params)) return subscribe(params, opts);
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: { ...opts?.headers, 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
      body: JSON.stringify(params),
    });
    const text = await response.text();
    try {
      return JSON.parse(text);
    } catch {
      return { errors: [{ message: 'HTTP ' + response.status + ': ' + text }] };
    }
  }
  const search = new URLSearchParams(location.search);
  const props = { fetcher };
  if (search.has('query')) props.query = search.get('query');
  if (search.has('variables')) props.variables = search.get('variables');
  ReactDOM.createRoot(document.getElementById('graphiql')).render(React.createElement(GraphiQL, props));
})();
