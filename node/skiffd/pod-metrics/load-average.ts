// Load averages over 10 seconds, per cgroup, as cAdvisor keeps them: an exponentially decayed mean of
// the number of runnable threads (and, apart, of threads in uninterruptible sleep), updated at each
// read. cAdvisor samples on its own timer; here each metrics read is a sample, and the decay uses the
// real time since the previous one, so irregular scrapes weigh correctly.

const WINDOW_NS = 10_000_000_000;
/** A cgroup not read for this long is forgotten (it has ended, or nobody scrapes it). */
const FORGET_NS = 300_000_000_000;

interface Entry {
  at: number;
  load: number;
  loadD: number;
}

export class LoadAverages {
  private readonly entries = new Map<string, Entry>();
  private prunedAt = 0;

  /** Feeds one sample (now, in ns of a monotonic clock) and returns the averages after it. */
  sample(key: string, running: number, uninterruptible: number, now: number): { load: number; loadD: number } {
    const prev = this.entries.get(key);
    let next: Entry;
    if (!prev) next = { at: now, load: running, loadD: uninterruptible };
    else {
      const decay = Math.exp(-Math.max(0, now - prev.at) / WINDOW_NS);
      next = { at: now, load: prev.load * decay + running * (1 - decay), loadD: prev.loadD * decay + uninterruptible * (1 - decay) };
    }
    this.entries.set(key, next);
    // Forgets cgroups not sampled for a while, now and then rather than at every sample.
    if (now - this.prunedAt > FORGET_NS / 10) {
      this.prunedAt = now;
      for (const [k, e] of this.entries) if (now - e.at > FORGET_NS) this.entries.delete(k);
    }
    return { load: next.load, loadD: next.loadD };
  }
}
