/** Timers a simulated component schedules and cancels all at once when it stops; none keeps the process alive. */
export class Timers {
  private readonly pending = new Set<NodeJS.Timeout>()

  later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.pending.delete(t)
      fn()
    }, ms)
    t.unref()
    this.pending.add(t)
  }

  clear(): void {
    for (const t of this.pending) clearTimeout(t)
    this.pending.clear()
  }
}
