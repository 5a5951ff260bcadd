// Both stand-ins keep each calendar's changes as a log in sequence order, which sync and delta
// tokens point into.

/** First index in `changes` whose seq is above `seq` (the log is in seq order). */
export function firstChangeAfter (changes: ReadonlyArray<{ seq: number }>, seq: number): number {
  let low = 0
  let high = changes.length
  while (low < high) {
    const middle = (low + high) >> 1
    if ((changes[middle]?.seq ?? Infinity) <= seq) low = middle + 1
    else high = middle
  }
  return low
}
