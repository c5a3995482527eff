// usage_nano_cores is a rate, so it needs the previous reading of the same cgroup. The owner of the
// pod or container forgets its key when it goes, so the map holds live ones only.
export class CpuRate {
  private readonly last = new Map<string, { at: bigint; usageNs: bigint }>();

  /** Records this reading; the rate since the previous one, if there was one. */
  sample(key: string, at: bigint, usageNs: bigint): bigint | undefined {
    const previous = this.last.get(key);
    this.last.set(key, { at, usageNs });
    if (previous && at > previous.at && usageNs >= previous.usageNs) return ((usageNs - previous.usageNs) * 1_000_000_000n) / (at - previous.at);
    return undefined;
  }

  forget(key: string): void {
    this.last.delete(key);
  }

  get size(): number {
    return this.last.size;
  }
}
