// The repeat part of the event dialog as people set it in Google Calendar or Outlook: every N days,
// weeks (on chosen weekdays), months or years, ending never, on a date or after a number of
// times; written as one RRULE line and read back into the same form. A rule the form cannot show
// (BYSETPOS, BYMONTHDAY lists, ...) is read as its frequency and kept as it is unless the user
// changes the repeat fields.
import rrule from 'rrule'
import { DateTime } from 'luxon'
import { frequencyOf, type EventChange, type Frequency } from './events.js'
import type { EditPlan } from './series-edit.js'

const { RRule } = rrule

export const WEEKDAYS = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'] as const
export type Weekday = typeof WEEKDAYS[number]

export interface RepeatForm {
  frequency: Frequency | ''
  interval: number
  /** Weekly only; in week order. */
  weekdays: Weekday[]
  ends: 'never' | 'until' | 'count'
  /** The last day (YYYY-MM-DD, in the user's zone) when `ends` is `until`. */
  until: string
  count: number
}

/** The form for a new rule starting on `start`: weekly repeats on the start's weekday. */
export function defaultRepeat (start: DateTime, frequency: Frequency | '' = ''): RepeatForm {
  return { frequency, interval: 1, weekdays: [WEEKDAYS[start.weekday - 1] as Weekday], ends: 'never', until: start.plus({ months: 3 }).toISODate() as string, count: 10 }
}

/**
 * The form once the start moved from `before` to `start`: a weekly repeat on the old start's weekday
 * alone moves to the new start's, as a new rule's first day is the start's; other days were chosen.
 */
export function followStart (form: RepeatForm, before: DateTime, start: DateTime): RepeatForm {
  const previous = WEEKDAYS[before.weekday - 1] as Weekday
  if (form.weekdays.length !== 1 || form.weekdays[0] !== previous) return form
  return { ...form, weekdays: [WEEKDAYS[start.weekday - 1] as Weekday] }
}

function ruleLine (rule: string[] | undefined): string | undefined {
  return rule?.find((line) => line.startsWith('RRULE:'))
}

/** The form for a series' rule lines, read in `zone`; null when there is no rule to read. */
export function repeatFormOf (rule: string[] | undefined, start: DateTime, zone: string): RepeatForm | null {
  const line = ruleLine(rule)
  if (line === undefined) return null
  let options
  try {
    options = RRule.parseString(line)
  } catch {
    return null
  }
  const frequency = frequencyOf([line])
  if (frequency === null) return null
  const form = defaultRepeat(start, frequency)
  form.interval = options.interval ?? 1
  const byDay = /(?:^RRULE:|;)BYDAY=([A-Z,]+)(?:;|$)/.exec(line)?.[1]
  if (frequency === 'WEEKLY' && byDay !== undefined) {
    const days = byDay.split(',').filter((day): day is Weekday => (WEEKDAYS as readonly string[]).includes(day))
    if (days.length > 0) form.weekdays = WEEKDAYS.filter((day) => days.includes(day))
  }
  const until = /(?:^RRULE:|;)UNTIL=(\d{8})(T\d{6}Z?)?(?:;|$)/.exec(line)
  if (options.count !== undefined && options.count !== null) {
    form.ends = 'count'
    form.count = options.count
  } else if (until !== null) {
    form.ends = 'until'
    // A UTC UNTIL is an instant: its day is the one the user sees it on; a date is that date.
    form.until = (until[2]?.endsWith('Z') === true
      ? DateTime.fromFormat(`${until[1] as string}${until[2]}`, "yyyyMMdd'T'HHmmss'Z'", { zone: 'UTC' }).setZone(zone)
      : DateTime.fromFormat(until[1] as string, 'yyyyMMdd', { zone })).toISODate() as string
  }
  return form
}

/** Why the form's values make no rule, or null when they do. */
export function repeatProblem (form: RepeatForm, startDay: string): string | null {
  if (form.frequency === '') return null
  if (!Number.isInteger(form.interval) || form.interval < 1 || form.interval > 999) return 'Repeat every 1 to 999.'
  if (form.frequency === 'WEEKLY' && form.weekdays.length === 0) return 'Choose at least one day of the week.'
  if (form.ends === 'count' && (!Number.isInteger(form.count) || form.count < 1 || form.count > 2000)) return 'End after 1 to 2000 times.'
  if (form.ends === 'until' && (!/^\d{4}-\d{2}-\d{2}$/.test(form.until) || form.until < startDay)) return 'The end date cannot be before the start date.'
  return null
}

/**
 * The RRULE line of the form, or null for no repeat. UNTIL is the end of the chosen day in the
 * event's zone, in UTC for a timed event (RFC 5545 asks UTC when the start has a zone) and as a
 * date for an all-day one.
 */
export function ruleOf (form: RepeatForm, options: { isAllDay: boolean, zone: string }): string | null {
  if (form.frequency === '') return null
  const parts = [`FREQ=${form.frequency}`]
  if (form.interval !== 1) parts.push(`INTERVAL=${form.interval}`)
  if (form.frequency === 'WEEKLY') parts.push(`BYDAY=${WEEKDAYS.filter((day) => form.weekdays.includes(day)).join(',')}`)
  if (form.ends === 'count') parts.push(`COUNT=${form.count}`)
  if (form.ends === 'until') {
    const last = DateTime.fromISO(form.until, { zone: options.zone })
    parts.push(`UNTIL=${options.isAllDay ? last.toFormat('yyyyMMdd') : last.endOf('day').set({ millisecond: 0 }).toUTC().toFormat("yyyyMMdd'T'HHmmss'Z'")}`)
  }
  return `RRULE:${parts.join(';')}`
}

function withLine (change: EventChange, line: string): EventChange {
  // EXDATE lines stay: the occurrences deleted from the series remain deleted.
  const others = (change.recurrence?.rule ?? []).filter((item) => !item.startsWith('RRULE:'))
  return { ...change, recurrence: { ...change.recurrence, rule: [line, ...others] } }
}

/** The plan with the form's rule in the change that carries a series rule (a single event's edit has none). */
export function withRule (plan: EditPlan, line: string): EditPlan {
  switch (plan.kind) {
    case 'create': return plan.change.recurrence?.rule === undefined ? plan : { ...plan, change: withLine(plan.change, line) }
    case 'replace': return plan.change.recurrence?.rule === undefined ? plan : { ...plan, change: withLine(plan.change, line) }
    case 'split': return plan.create.recurrence?.rule === undefined ? plan : { ...plan, create: withLine(plan.create, line) }
  }
}
