// Turning what the user asked for in the event dialog (or by dragging) into API operations.
// The API has a PUT on an occurrence id for "this", a PUT on the series for "all", and a DELETE
// with applyTo=thisAndFollowing that ends the series; "this and following" for an edit is that
// DELETE followed by a new series from the edited occurrence on.
import { DateTime } from 'luxon'
import { compileSeries, exclusionsFrom, expandSeries } from '../../../lib/events/recurrence.js'
import { eventInstant } from '../../../lib/events/time.js'
import type { Reminder } from '../../../lib/events/reminders.js'
import type { EventColor } from '../../../lib/events/colors.js'
import { frequencyOf, isOccurrence, seriesIdOf, type ApplyTo, type CalendarEvent, type EventChange, type Frequency } from './events.js'

/** The dialog's fields. Dates are in the event's form: RFC 3339 with offset, or YYYY-MM-DD. */
export interface EventDraft {
  title: string
  description: string
  location: string
  isAllDay: boolean
  startDate: string
  endDate: string
  timeZone: string
  /** Repeat frequency; null for a single event. */
  frequency: Frequency | null
  /** Notifications before the start; absent: the event's own stay (a new event: the calendar's default). */
  reminders?: Reminder[]
  /** The event's own colour; null: the calendar's; absent: the event's own stays. */
  color?: EventColor | null
}

export type EditPlan =
  | { kind: 'create', change: EventChange }
  | { kind: 'replace', id: string, change: EventChange }
  | { kind: 'split', deleteId: string, create: EventChange }

function ruleFor (frequency: Frequency, previous?: string[]): string[] {
  // Keep the series' own rule details (BYDAY, INTERVAL, UNTIL, EXDATE) when the frequency is unchanged.
  if (previous !== undefined && frequencyOf(previous) === frequency) return previous
  return [`RRULE:FREQ=${frequency}`]
}

function fields (draft: EventDraft): EventChange {
  const change: EventChange = {
    title: draft.title,
    isAllDay: draft.isAllDay,
    startDate: draft.startDate,
    endDate: draft.endDate,
    timeZone: draft.timeZone
  }
  if (draft.description !== '') change.description = draft.description
  if (draft.location !== '') change.location = draft.location
  if (draft.reminders !== undefined) change.reminders = draft.reminders
  if (draft.color != null) change.color = draft.color
  return change
}

/**
 * Keeps what the dialog does not show (priority, origin, the calendar), and the reminders and colour unless the draft sets them. The provider id is the
 * server's: an event's stays with it, and a new one (the tail of "this and following") gets its own.
 */
function kept (event: CalendarEvent, draft: EventDraft): Pick<EventChange, 'priority' | 'origin' | 'calendarId' | 'reminders' | 'color'> {
  const change: Pick<EventChange, 'priority' | 'origin' | 'calendarId' | 'reminders' | 'color'> = { priority: event.priority, origin: event.origin }
  if (event.calendarId !== undefined) change.calendarId = event.calendarId
  // A draft that says nothing of reminders (a drag, a client without the field) keeps the event's.
  if (event.reminders !== undefined) change.reminders = event.reminders
  // So does its colour; a draft's null is the calendar's colour.
  if (event.color !== undefined && draft.color === undefined) change.color = event.color
  return change
}

export function planCreate (draft: EventDraft, id: string): EditPlan {
  const change: EventChange = { _id: id, ...fields(draft) }
  if (draft.frequency !== null) change.recurrence = { rule: ruleFor(draft.frequency) }
  return { kind: 'create', change }
}

/**
 * Where the series starts once one of its occurrences moved from `original` to `moved`: the same
 * number of days before the edited one as before, at the new wall-clock time of day.
 */
function shiftedSeriesStart (series: CalendarEvent, originalStart: string, draft: EventDraft): { startDate: string, endDate: string } {
  const zone = draft.timeZone
  const seriesStart = DateTime.fromISO(series.startDate, { setZone: !series.isAllDay, zone: series.isAllDay ? zone : undefined }).setZone(zone)
  const original = DateTime.fromISO(originalStart, { setZone: !series.isAllDay, zone: series.isAllDay ? zone : undefined }).setZone(zone)
  const daysBefore = Math.round(original.startOf('day').diff(seriesStart.startOf('day'), 'days').days)
  const newStart = draft.isAllDay ? DateTime.fromISO(draft.startDate, { zone }) : DateTime.fromISO(draft.startDate, { setZone: true }).setZone(zone)
  const newEnd = draft.isAllDay ? DateTime.fromISO(draft.endDate, { zone }) : DateTime.fromISO(draft.endDate, { setZone: true }).setZone(zone)
  const start = newStart.minus({ days: daysBefore })
  const end = start.plus(newEnd.diff(newStart))
  return draft.isAllDay
    ? { startDate: start.toISODate() as string, endDate: end.toISODate() as string }
    : { startDate: start.toISO({ suppressMilliseconds: true }) as string, endDate: end.toISO({ suppressMilliseconds: true }) as string }
}

/**
 * The rule of the part of a series from `cut` on: UNTIL kept, COUNT reduced by what came before
 * (counted before exclusions, as RFC 5545 counts it), and only the exclusions from the cut on.
 */
export function followingRule (series: CalendarEvent, cut: Date): string[] {
  const rule = exclusionsFrom({ ...series, rule: series.recurrence?.rule ?? [] }, cut)
  const count = rule.map((line) => /(?:^RRULE:|;)COUNT=(\d+)/.exec(line)?.[1]).find((value) => value !== undefined)
  if (count === undefined) return rule
  const seriesStart = eventInstant(series.startDate, series.isAllDay, series.timeZone)
  const rruleOnly = rule.filter((line) => line.startsWith('RRULE:'))
  const before = expandSeries(compileSeries({ ...series, rule: rruleOnly }), seriesStart, cut, Number(count)).length
  const left = Math.max(1, Number(count) - before)
  return rule.map((line) => line.startsWith('RRULE:') ? line.replace(/COUNT=\d+/, `COUNT=${left}`) : line)
}

/**
 * The operations for an edit of `event` as it was read. `series` is the stored series of an
 * occurrence (needed for "all" and "this and following").
 */
export function planEdit (event: CalendarEvent, draft: EventDraft, scope: ApplyTo, series: CalendarEvent | null, newId: string): EditPlan {
  if (!isOccurrence(event)) {
    const change: EventChange = { ...kept(event, draft), ...fields(draft) }
    if (draft.frequency !== null) change.recurrence = { rule: ruleFor(draft.frequency, event.recurrence?.rule) }
    return { kind: 'replace', id: event._id, change }
  }
  const seriesId = seriesIdOf(event) as string
  if (scope === 'this' || series === null) {
    const change: EventChange = { ...kept(event, draft), ...fields(draft), recurrence: { eventId: seriesId } }
    if (event.originalStartDate !== undefined) change.originalStartDate = event.originalStartDate
    return { kind: 'replace', id: event._id, change }
  }
  const originalStart = event.originalStartDate ?? event.startDate
  if (scope === 'all') {
    const change: EventChange = { ...kept(series, draft), ...fields(draft), ...shiftedSeriesStart(series, originalStart, draft) }
    if (draft.frequency !== null) change.recurrence = { rule: ruleFor(draft.frequency, series.recurrence?.rule) }
    return { kind: 'replace', id: seriesId, change }
  }
  const cut = eventInstant(originalStart, series.isAllDay, series.timeZone)
  const create: EventChange = { _id: newId, ...kept(series, draft), ...fields(draft) }
  if (draft.frequency !== null) {
    create.recurrence = { rule: frequencyOf(series.recurrence?.rule) === draft.frequency ? followingRule(series, cut) : ruleFor(draft.frequency) }
  }
  return { kind: 'split', deleteId: event._id, create }
}

/** A move or resize by dragging: the same dates, shifted, through the same plans. */
export function draftOf (event: CalendarEvent, frequency: Frequency | null): EventDraft {
  return {
    title: event.title,
    description: event.description ?? '',
    location: event.location ?? '',
    isAllDay: event.isAllDay,
    startDate: event.startDate,
    endDate: event.endDate,
    timeZone: event.timeZone,
    frequency
  }
}
