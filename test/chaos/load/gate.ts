/** The gate: workers pass it before each step; the run closes it to kill, restart and verify. */

export class Gate {
  #open = true
  #waiters: Array<() => void> = []
  waiting = 0

  get isOpen(): boolean {
    return this.#open
  }

  close(): void {
    this.#open = false
  }

  open(): void {
    this.#open = true
    const waiters = this.#waiters
    this.#waiters = []
    for (const wake of waiters) wake()
  }

  async pass(): Promise<void> {
    if (this.#open) return
    this.waiting += 1
    try {
      await new Promise<void>((wake) => this.#waiters.push(wake))
    } finally {
      this.waiting -= 1
    }
  }
}
