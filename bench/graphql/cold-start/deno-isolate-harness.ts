// The module Worker deno-isolates.ts starts per sample: imports one bundle in this fresh isolate and
// answers with the body of its first response.
interface Job {
  file: string;
  path: string;
}

self.onmessage = async (event: MessageEvent<Job>) => {
  try {
    const mod = await import(event.data.file);
    const response: Response = await mod.default.fetch(new Request(`http://localhost${event.data.path}`));
    self.postMessage({ body: await response.text() });
  } catch (error) {
    self.postMessage({ error: String((error as Error)?.stack ?? error) });
  }
};
