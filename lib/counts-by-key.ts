/**
 * Work under way per key (a user): a share each key may hold at most, counted in this process.
 * Used where one user's slow servers must not take what the others need (Sync's job slots, the
 * connects that wait on a server a user named).
 */
export class CountsByKey {
  readonly #counts = new Map<string, number>()

  /** Counts one more for `key` unless it holds `limit` already (then false, and nothing counted). */
  tryTake (key: string, limit: number): boolean {
    const held = this.#counts.get(key) ?? 0
    if (held >= limit) return false
    this.#counts.set(key, held + 1)
    return true
  }

  /** Counts one more for `key`, whatever it holds (its share was checked before). */
  take (key: string): void {
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1)
  }

  /** Gives back one taken for `key`. */
  release (key: string): void {
    const left = (this.#counts.get(key) ?? 1) - 1
    if (left <= 0) this.#counts.delete(key)
    else this.#counts.set(key, left)
  }

  /** The keys holding `limit` or more. */
  atLeast (limit: number): string[] {
    return [...this.#counts].flatMap(([key, held]) => held >= limit ? [key] : [])
  }
}
