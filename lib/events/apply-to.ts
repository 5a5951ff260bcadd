import type { EventApplyTo } from '../../schemas/event.js'
import type { EventRecord } from './record.js'
import { planTransition, reportFor, type TransitionResult } from './transition.js'
import { compileSeries, firstOccurrence, RecurrenceRuleError, truncateRule, type CompiledSeries } from './recurrence.js'
import { eventInstant } from './time.js'

export interface OccurrenceTarget {
  /** The stored occurrence (an edited or cancelled one), or null when it was never edited. */
  stored: EventRecord | null
  /** The occurrence as the series produces it; used when nothing is stored for it. */
  expanded: EventRecord
}

/**
 * Deleting an occurrence of a series: `this` cancels that occurrence only, `all` removes the
 * series with every occurrence, `thisAndFollowing` ends the series before that occurrence and
 * removes the edited occurrences from there on (or removes the series, when it is the first).
 */
export function planOccurrenceDelete (series: EventRecord, target: OccurrenceTarget, applyTo: EventApplyTo, now: Date): TransitionResult {
  if (applyTo === 'all') return planTransition(series, null, now)
  if (applyTo === 'this') {
    return target.stored === null
      ? planTransition(null, { ...target.expanded, status: 'cancelled' }, now)
      : planTransition(target.stored, null, now)
  }
  const rule = series.recurrence?.rule
  const originalStartDate = (target.stored ?? target.expanded).originalStartDate
  if (rule === undefined || originalStartDate === undefined) return { ok: false, reason: 'the target is not an occurrence of this series' }
  let compiled: CompiledSeries
  try {
    compiled = compileSeries({ ...series, rule })
  } catch (error) {
    // A series stored before its rule was refused has no occurrences to cut between.
    if (error instanceof RecurrenceRuleError) return { ok: false, reason: `the series cannot be cut: ${error.message}` }
    throw error
  }
  const cutAt = eventInstant(originalStartDate, series.isAllDay, series.timeZone)
  const first = firstOccurrence(compiled)
  if (first === null || cutAt <= first.start) return planTransition(series, null, now)
  const truncated: EventRecord = { ...series, recurrence: { rule: truncateRule(compiled, cutAt) }, lastUpdated: now.toISOString() }
  return {
    ok: true,
    plan: {
      writes: [
        { kind: 'replace', event: truncated },
        { kind: 'deleteInstances', seriesId: series._id, fromOriginalStart: cutAt }
      ],
      report: reportFor(series, 'update')
    }
  }
}
