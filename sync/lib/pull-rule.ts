// Specification, "Change feed to message translation", item 3: when a pull appends a `calendar`
// invalidation. Idle pulls must not wake open tabs.

type PullOperation = 'incremental' | 'initialImport' | 'repair' | 'bootstrapCatchUp'

export interface PullOutcome {
  operation: PullOperation
  changed: number
  deleted: number
  /** The calendar's cursor-expiry streak was above zero and this pull cleared it. */
  expiryStreakCleared: boolean
  /** A new generation of the calendar's data was promoted during this pull. */
  generationPromoted: boolean
}

export function appendsCalendarInvalidation (outcome: PullOutcome): boolean {
  if (outcome.operation !== 'incremental') return true
  return outcome.changed + outcome.deleted > 0 || outcome.expiryStreakCleared || outcome.generationPromoted
}
