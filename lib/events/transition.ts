import type { EventRecord } from './record.js'
import { followedFields, isStill, movedExclusions, seriesMove, timingOf } from './series-move.js'

export type EventCategory = 'standalone' | 'base' | 'instance'
export type EventState = 'absent' | `${EventCategory}.${'confirmed' | 'cancelled'}`

/** States a stored event can be in: a cancelled standalone event or series is deleted, not kept. */
export const BEFORE_STATES = ['absent', 'standalone.confirmed', 'base.confirmed', 'instance.confirmed', 'instance.cancelled'] as const
export const AFTER_STATES = [
  'standalone.confirmed', 'standalone.cancelled', 'base.confirmed', 'base.cancelled',
  'instance.confirmed', 'instance.cancelled', 'absent'
] as const
export type BeforeState = typeof BEFORE_STATES[number]
export type AfterState = typeof AFTER_STATES[number]

export type ReportOperation = 'create' | 'update' | 'delete'

/**
 * What one cell of the table does to own data:
 * - insert: store the new event;
 * - replace: overwrite the stored event with the new one;
 * - replaceSeries: overwrite a series base; its edited and cancelled occurrences follow it (move
 *   with its timing, take the title, description and location they had not changed themselves:
 *   lib/events/series-move.ts);
 * - replaceDetach: a series becomes a single event, so its edited occurrences go;
 * - delete: remove the stored event;
 * - deleteSeries: remove a series base and all its occurrences;
 * - tombstone: keep the occurrence as cancelled, so expansion skips it;
 * - noop: nothing to change;
 * - refuse: the change is not allowed.
 */
type TransitionAction = 'insert' | 'replace' | 'replaceSeries' | 'replaceDetach' | 'delete' | 'deleteSeries' | 'tombstone' | 'noop' | 'refuse'

export interface TransitionCell {
  action: TransitionAction
  report: ReportOperation | null
}

const REFUSE: TransitionCell = { action: 'refuse', report: null }
const NOOP: TransitionCell = { action: 'noop', report: null }

export const TRANSITIONS: Record<BeforeState, Record<AfterState, TransitionCell>> = {
  absent: {
    'standalone.confirmed': { action: 'insert', report: 'create' },
    'standalone.cancelled': NOOP,
    'base.confirmed': { action: 'insert', report: 'create' },
    'base.cancelled': NOOP,
    'instance.confirmed': { action: 'insert', report: 'create' },
    'instance.cancelled': { action: 'tombstone', report: 'delete' },
    absent: NOOP
  },
  'standalone.confirmed': {
    'standalone.confirmed': { action: 'replace', report: 'update' },
    'standalone.cancelled': { action: 'delete', report: 'delete' },
    'base.confirmed': { action: 'replace', report: 'update' },
    'base.cancelled': { action: 'delete', report: 'delete' },
    'instance.confirmed': REFUSE,
    'instance.cancelled': REFUSE,
    absent: { action: 'delete', report: 'delete' }
  },
  'base.confirmed': {
    'standalone.confirmed': { action: 'replaceDetach', report: 'update' },
    'standalone.cancelled': { action: 'deleteSeries', report: 'delete' },
    'base.confirmed': { action: 'replaceSeries', report: 'update' },
    'base.cancelled': { action: 'deleteSeries', report: 'delete' },
    'instance.confirmed': REFUSE,
    'instance.cancelled': REFUSE,
    absent: { action: 'deleteSeries', report: 'delete' }
  },
  'instance.confirmed': {
    'standalone.confirmed': REFUSE,
    'standalone.cancelled': REFUSE,
    'base.confirmed': REFUSE,
    'base.cancelled': REFUSE,
    'instance.confirmed': { action: 'replace', report: 'update' },
    'instance.cancelled': { action: 'tombstone', report: 'delete' },
    absent: { action: 'tombstone', report: 'delete' }
  },
  'instance.cancelled': {
    'standalone.confirmed': REFUSE,
    'standalone.cancelled': REFUSE,
    'base.confirmed': REFUSE,
    'base.cancelled': REFUSE,
    'instance.confirmed': { action: 'replace', report: 'create' },
    'instance.cancelled': NOOP,
    absent: NOOP
  }
}

export function categoryOf (event: EventRecord): EventCategory {
  if (event.recurrence?.rule !== undefined) return 'base'
  if (event.recurrence?.eventId !== undefined) return 'instance'
  return 'standalone'
}

export function stateOf (event: EventRecord | null): EventState {
  return event === null ? 'absent' : `${categoryOf(event)}.${event.status}`
}

export type OwnWrite =
  | { kind: 'insert', event: EventRecord }
  | { kind: 'replace', event: EventRecord }
  | { kind: 'delete', eventId: string }
  /** Removes the stored occurrences of a series, all of them or those from an original start on. */
  | { kind: 'deleteInstances', seriesId: string, fromOriginalStart?: Date }
  /**
   * The series changed its timing or its title, description or location: its stored occurrences
   * follow it (lib/events/series-move.ts).
   */
  | { kind: 'followSeries', before: EventRecord, after: EventRecord }

/** What the Sync service is told after the own data changed. */
export interface ChangeReport {
  eventId: string
  operation: ReportOperation
  calendarId?: string
}

export function reportFor (event: EventRecord, operation: ReportOperation): ChangeReport {
  return event.calendarId === undefined ? { eventId: event._id, operation } : { eventId: event._id, operation, calendarId: event.calendarId }
}

export interface PersistencePlan {
  writes: OwnWrite[]
  report: ChangeReport | null
}

export type TransitionResult =
  | { ok: true, plan: PersistencePlan }
  | { ok: false, reason: string }

function timingChanged (before: EventRecord, after: EventRecord): boolean {
  return before.startDate !== after.startDate || before.endDate !== after.endDate ||
    before.isAllDay !== after.isAllDay || before.timeZone !== after.timeZone ||
    JSON.stringify(before.recurrence?.rule) !== JSON.stringify(after.recurrence?.rule)
}

const isExclusion = (line: string) => line.startsWith('EXDATE')

/**
 * A series whose start moved, sent back with the exclusions it was read with (the client kept the
 * rule as it was), has them moved too, so a cancelled occurrence stays cancelled at its new time.
 * Exclusions the client changed are its own and stay as sent.
 */
function withMovedExclusions (before: EventRecord, after: EventRecord): EventRecord {
  const move = seriesMove(before, after)
  const rule = after.recurrence?.rule
  if (move === null || isStill(move) || rule === undefined) return after
  const sentBack = JSON.stringify(rule.filter(isExclusion)) === JSON.stringify((before.recurrence?.rule ?? []).filter(isExclusion))
  if (!sentBack) return after
  return { ...after, recurrence: { rule: [...rule.filter((line) => !isExclusion(line)), ...movedExclusions(timingOf(before), timingOf(after), move)] } }
}

const REFUSALS: Partial<Record<EventCategory, string>> = {
  instance: 'an occurrence stays an occurrence of its series; edit the series or create a new event',
  standalone: 'a single event cannot become an occurrence of a series',
  base: 'a series cannot become an occurrence of another series'
}

/**
 * Plans one write. `before` is the stored event (null when there is none), `after` the event as
 * the client wants it, or null for a delete. Reads nothing and writes nothing.
 */
export function planTransition (before: EventRecord | null, after: EventRecord | null, now: Date): TransitionResult {
  const beforeState = stateOf(before)
  const afterState = stateOf(after) as AfterState
  if (!(BEFORE_STATES as readonly string[]).includes(beforeState)) {
    return { ok: false, reason: `stored event is in an unexpected state ${beforeState}` }
  }
  const cell = TRANSITIONS[beforeState as BeforeState][afterState]
  if (cell.action === 'refuse') {
    return { ok: false, reason: REFUSALS[before === null ? 'standalone' : categoryOf(before)] ?? 'change not allowed' }
  }
  if (cell.action === 'noop') return { ok: true, plan: { writes: [], report: null } }
  // Every other cell has an event on at least one side: a delete has before, anything else after.
  const subject = (after ?? before) as EventRecord
  if (before !== null && after !== null && categoryOf(before) === 'instance' && categoryOf(after) === 'instance' &&
    (before.recurrence?.eventId !== after.recurrence?.eventId || before.originalStartDate !== after.originalStartDate)) {
    return { ok: false, reason: 'an occurrence keeps its series and its original start' }
  }
  const writes: OwnWrite[] = []
  switch (cell.action) {
    case 'insert':
      writes.push({ kind: 'insert', event: subject })
      break
    case 'replace':
      writes.push({ kind: 'replace', event: subject })
      break
    case 'replaceSeries': {
      const series = before as EventRecord
      const retimed = timingChanged(series, subject)
      const changed = retimed ? withMovedExclusions(series, subject) : subject
      writes.push({ kind: 'replace', event: changed })
      if (retimed || Object.keys(followedFields(series, changed, series)).length > 0) {
        writes.push({ kind: 'followSeries', before: series, after: changed })
      }
      return { ok: true, plan: { writes, report: cell.report === null ? null : reportFor(changed, cell.report) } }
    }
    case 'replaceDetach':
      writes.push({ kind: 'replace', event: subject }, { kind: 'deleteInstances', seriesId: subject._id })
      break
    case 'delete':
      writes.push({ kind: 'delete', eventId: subject._id })
      break
    case 'deleteSeries':
      writes.push({ kind: 'delete', eventId: subject._id }, { kind: 'deleteInstances', seriesId: subject._id })
      break
    case 'tombstone': {
      const tombstone: EventRecord = { ...subject, status: 'cancelled', lastUpdated: now.toISOString() }
      writes.push({ kind: before === null ? 'insert' : 'replace', event: tombstone })
      break
    }
  }
  return { ok: true, plan: { writes, report: cell.report === null ? null : reportFor(subject, cell.report) } }
}
