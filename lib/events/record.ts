import { EVENT_DEFAULTS, type EventChangeInput, type EventView } from '../../schemas/event.js'
import { normalizeEventId, mintEventId } from './ids.js'
import { DATE_ONLY, DATE_TIME_WITH_OFFSET, dateMillis, isValidTimeZone, timedMillis } from './time.js'
import { compileSeries, RecurrenceRuleError } from './recurrence.js'
import { canonicalReminders } from './reminders.js'
import type { EventContent, WriteIssue } from '../../schemas/sync/index.js'

/** An event as stored: the API shape with a bare 24-hex `_id` and the owner's id. */
export type EventRecord = EventView

/** A change with every defaulted field filled in (the HTTP layer fills them too; lib does not rely on it). */
type CompleteEventChange = EventChangeInput & Required<Pick<EventChangeInput, keyof typeof EVENT_DEFAULTS>>

function withDefaults (change: EventChangeInput): CompleteEventChange {
  return {
    ...change,
    title: change.title ?? EVENT_DEFAULTS.title,
    isAllDay: change.isAllDay ?? EVENT_DEFAULTS.isAllDay,
    timeZone: change.timeZone ?? EVENT_DEFAULTS.timeZone,
    status: change.status ?? EVENT_DEFAULTS.status,
    origin: change.origin ?? EVENT_DEFAULTS.origin,
    priority: change.priority ?? EVENT_DEFAULTS.priority
  }
}

export interface EventIssue {
  /** JSON pointer into the change, e.g. `/endDate`. */
  path: string
  message: string
  /** A code of its own when clients can act on it (a refused recurrence rule); otherwise EVENT_INVALID. */
  code?: string
}

/** What the checks read of a change: its dates, their form and the rule or series they belong to. */
type CheckedChange = Pick<CompleteEventChange, '_id' | 'startDate' | 'endDate' | 'isAllDay' | 'timeZone' | 'recurrence' | 'originalStartDate'>

function checkDatePair (change: CheckedChange): EventIssue | null {
  const instants: number[] = []
  for (const field of ['startDate', 'endDate'] as const) {
    // Order and validity do not depend on the event's zone: a timed value carries its offset,
    // and all-day dates compare as dates. A value read as an instant has the form; only one that
    // is not is told apart: the wrong form, or a date no calendar has.
    const millis = change.isAllDay ? dateMillis(change[field]) : timedMillis(change[field])
    if (millis === null) {
      const format = change.isAllDay ? DATE_ONLY : DATE_TIME_WITH_OFFSET
      const expected = change.isAllDay ? 'a YYYY-MM-DD date for an all-day event' : 'an RFC 3339 date-time with offset for a timed event'
      return { path: `/${field}`, message: format.test(change[field]) ? 'must be a real calendar date' : `must be ${expected}` }
    }
    instants.push(millis)
  }
  if ((instants[1] as number) <= (instants[0] as number)) return { path: '/endDate', message: 'must be after startDate' }
  return null
}

function checkRecurrence (change: CheckedChange): EventIssue | null {
  const { recurrence } = change
  if (recurrence?.rule !== undefined && recurrence.eventId !== undefined) {
    return { path: '/recurrence', message: 'must have either rule (a series) or eventId (an occurrence), not both' }
  }
  if (recurrence?.eventId !== undefined) {
    if (change.originalStartDate === undefined) return { path: '/originalStartDate', message: 'is required on an occurrence of a series' }
    const instant = change.isAllDay ? dateMillis(change.originalStartDate) : timedMillis(change.originalStartDate)
    if (instant === null) {
      return { path: '/originalStartDate', message: 'must have the same form as startDate' }
    }
    if (change._id !== undefined && normalizeEventId(change._id) === normalizeEventId(recurrence.eventId)) {
      return { path: '/recurrence/eventId', message: 'must name another event than the occurrence itself' }
    }
    return null
  }
  if (change.originalStartDate !== undefined) return { path: '/originalStartDate', message: 'is only allowed on an occurrence of a series' }
  if (recurrence?.rule !== undefined) {
    try {
      compileSeries({ startDate: change.startDate, endDate: change.endDate, isAllDay: change.isAllDay, timeZone: change.timeZone, rule: recurrence.rule })
    } catch (error) {
      if (error instanceof RecurrenceRuleError) {
        const issue = { path: '/recurrence/rule', message: `is not a valid rule: ${error.message}` }
        return error.code === 'RRULE_INVALID' ? issue : { ...issue, code: error.code }
      }
      throw error
    }
  }
  return null
}

/**
 * The checks a JSON schema cannot express. The change has already passed the schema, so every
 * field has its type and bounds; what is left are relations between fields.
 */
export function validateEventChange (input: EventChangeInput): EventIssue | null {
  // Only the fields the checks read, defaults filled in: an import checks every event it is given.
  const change: CheckedChange = {
    _id: input._id,
    startDate: input.startDate,
    endDate: input.endDate,
    isAllDay: input.isAllDay ?? EVENT_DEFAULTS.isAllDay,
    timeZone: input.timeZone ?? EVENT_DEFAULTS.timeZone,
    recurrence: input.recurrence,
    originalStartDate: input.originalStartDate
  }
  if (change._id !== undefined && change._id.includes('_')) {
    return { path: '/_id', message: 'must be a 24-hex id; an occurrence id is only accepted by PUT on that occurrence' }
  }
  if (!isValidTimeZone(change.timeZone)) return { path: '/timeZone', message: 'must be an IANA time zone name' }
  return checkDatePair(change) ?? checkRecurrence(change)
}

/** The record a valid change stands for: owner from the session, id normalized or minted. */
export function toEventRecord (input: EventChangeInput, owner: { userId: string, now: Date }): EventRecord {
  const change = withDefaults(input)
  const record: EventRecord = {
    _id: change._id === undefined ? mintEventId() : normalizeEventId(change._id),
    user: owner.userId,
    title: change.title,
    startDate: change.startDate,
    endDate: change.endDate,
    isAllDay: change.isAllDay,
    timeZone: change.timeZone,
    status: change.status,
    origin: change.origin,
    priority: change.priority,
    lastUpdated: owner.now.toISOString()
  }
  if (change.description !== undefined) record.description = change.description
  if (change.location !== undefined) record.location = change.location
  if (change.reminders !== undefined) record.reminders = canonicalReminders(change.reminders)
  if (change.color !== undefined) record.color = change.color
  if (change.recurrence?.rule !== undefined) record.recurrence = { rule: change.recurrence.rule }
  if (change.recurrence?.eventId !== undefined) record.recurrence = { eventId: normalizeEventId(change.recurrence.eventId) }
  if (change.originalStartDate !== undefined) record.originalStartDate = change.originalStartDate
  if (change.calendarId !== undefined) record.calendarId = change.calendarId
  return record
}

/** What the backend keeps about an event's provider copy, beside the event itself. */
export interface ProviderFields {
  connectionId?: string
  iCalUID?: string
  providerEtag?: string
  providerUpdated?: string
  /** The import generation that last wrote the event. */
  generation?: string
  /** An exception whose series master has not arrived: the master's provider id. Hidden from reads. */
  waitingForSeries?: string
  /**
   * A provider series whose rule this service refuses to expand (for example FREQ=MINUTELY): the
   * code of the refusal. The series is kept with its rule, and reads show it as its first
   * occurrence only.
   */
  expansionSkipped?: string
  /**
   * The event's last change made here is not at its provider (refused, or failing), as Sync last
   * told; kept through later changes until Sync tells that one reached the provider.
   */
  syncIssue?: WriteIssue
  /**
   * The provider's version a change made here was made on, kept until the provider's copy shows
   * the change (its echo): Sync merges a change made at the provider meanwhile against it.
   */
  providerBase?: EventContent
}

export type ProviderRecord = EventRecord & ProviderFields
