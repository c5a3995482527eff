// The part of autocannon's programmatic API the bench uses (the package ships no types).
declare module 'autocannon' {
  interface Histogram {
    average: number;
    total: number;
    p50: number;
    p99: number;
  }
  namespace autocannon {
    interface Options {
      url: string;
      method?: 'GET' | 'POST';
      headers?: Record<string, string>;
      body?: string;
      connections?: number;
      /** Seconds. */
      duration?: number;
    }
    interface Result {
      requests: Histogram;
      latency: Histogram;
      /** Seconds the run lasted. */
      duration: number;
      non2xx: number;
      errors: number;
      timeouts: number;
    }
  }
  function autocannon(options: autocannon.Options): Promise<autocannon.Result>;
  export default autocannon;
}
