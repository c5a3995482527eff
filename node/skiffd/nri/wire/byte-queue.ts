// Bytes received but not yet taken, kept as the chunks they came in: a message spread over many small
// chunks is copied once, when it is whole, not once per chunk (which would make a peer that sends a
// large message in tiny pieces cost time quadratic in its size).
export class ByteQueue {
  private chunks: Buffer[] = [];
  private bytes = 0;

  get length(): number {
    return this.bytes;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.bytes += chunk.length;
  }

  /** The first n bytes, left in place (n at most `length`). */
  peek(n: number): Buffer {
    if (this.chunks[0].length < n) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0].subarray(0, n);
  }

  /** The first n bytes, removed (n at most `length`). */
  take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.bytes = rest.length;
    return all.subarray(0, n);
  }
}
