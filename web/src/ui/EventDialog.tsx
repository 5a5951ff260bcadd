// One event in one dialog: its details card (opened by a click), then, in the same dialog, the
// form to create or edit it: title, all day, start and end, calendar, repeat (every N days, weeks
// on chosen weekdays, months or years, ending never, on a date or after N times), location,
// description; for an occurrence of a series, which occurrences a save or a delete applies to.
import { useEffect, useState } from 'preact/hooks'
import { DateTime } from 'luxon'
import { Dialog } from './Dialog.js'
import { LocationInput } from './LocationInput.js'
import { ReminderFields, reminderRows, type ReminderRow } from './ReminderFields.js'
import { ColorFields } from './ColorFields.js'
import type { EventColor } from '../../../lib/events/colors.js'
import { customMinutes } from '../lib/reminders.js'
import { FREQUENCIES, isOccurrence, newEventId, seriesIdOf, type ApplyTo, type CalendarEvent, type Frequency } from '../lib/events.js'
import { planCreate, planEdit, type EditPlan, type EventDraft } from '../lib/series-edit.js'
import { defaultRepeat, followStart, repeatFormOf, repeatProblem, ruleOf, WEEKDAYS, withRule, type RepeatForm, type Weekday } from '../lib/recurrence-form.js'
import { applyPlan, currentSource, deleteEvent, userZone } from '../data/calendar.js'
import { calendarKeyOf, defaultCalendarOf, OWN_CALENDAR, type ShownCalendar } from '../data/calendars.js'
import { preferences } from '../data/preferences.js'
import { newEventReminders } from '../lib/preferences.js'
import { EventDetails, ScopeChoice } from './EventDetails.js'

export type EventDialogState =
  | { kind: 'closed' }
  | { kind: 'details', event: CalendarEvent }
  /** `from`: a duplicate, the form filled from that event (and its series' rule). */
  | { kind: 'create', start: DateTime, end: DateTime, isAllDay: boolean, from?: { event: CalendarEvent, rule: string[] | undefined }, title?: string }
  | { kind: 'edit', event: CalendarEvent }

interface Form {
  title: string
  isAllDay: boolean
  startDay: string
  startTime: string
  endDay: string
  endTime: string
  repeat: RepeatForm
  /** The user changed a repeat field: the form's rule replaces the series' own. */
  repeatChanged: boolean
  /** The person ticked or unticked a weekday: the weekdays no longer follow the start. */
  weekdaysPicked: boolean
  calendar: string
  location: string
  description: string
  /** Undefined: the event keeps the calendar's default reminders. */
  reminders: ReminderRow[] | undefined
  /** The person set the reminders: a new event's then stay when its calendar changes. */
  remindersPicked: boolean
  /** Undefined: drawn in the calendar's colour. */
  color: EventColor | undefined
  scope: ApplyTo
}

const FREQUENCY_LABELS: Record<Frequency, string> = { DAILY: 'Every day', WEEKLY: 'Every week', MONTHLY: 'Every month', YEARLY: 'Every year' }
const UNIT_LABELS: Record<Frequency, [string, string]> = { DAILY: ['day', 'days'], WEEKLY: ['week', 'weeks'], MONTHLY: ['month', 'months'], YEARLY: ['year', 'years'] }
const WEEKDAY_NAMES: Record<Weekday, string> = { MO: 'Monday', TU: 'Tuesday', WE: 'Wednesday', TH: 'Thursday', FR: 'Friday', SA: 'Saturday', SU: 'Sunday' }

function defaultReminderRows (calendar: string): ReminderRow[] | undefined {
  return reminderRows(newEventReminders(preferences.get(), calendar))
}

/**
 * The time field's step in seconds: five minutes, as a calendar's times usually are, unless the
 * time is off that grid (an event another client made at 9:03), which a five-minute step would
 * refuse as invalid and so keep from being saved at all.
 */
function timeStep (time: string): number {
  const minutes = Number(time.slice(3, 5))
  return Number.isInteger(minutes) && minutes % 5 === 0 ? 300 : 60
}

/** A new event moved to `calendar`: its reminders are that calendar's until the person sets their own. */
function inCalendarOf (form: Form, calendar: string): Form {
  return { ...form, calendar, ...(form.remindersPicked ? {} : { reminders: defaultReminderRows(calendar) }) }
}

function formFrom (state: Exclude<EventDialogState, { kind: 'closed' | 'details' }>, rule: string[] | undefined, newCalendar: string): Form {
  if (state.kind === 'create') {
    const end = state.isAllDay ? state.end.minus({ days: 1 }) : state.end
    const from = state.from?.event
    return {
      title: from?.title ?? state.title ?? '',
      isAllDay: state.isAllDay,
      repeat: repeatFormOf(state.from?.rule, state.start, userZone) ?? defaultRepeat(state.start),
      repeatChanged: false,
      weekdaysPicked: false,
      calendar: from === undefined ? newCalendar : calendarKeyOf(from),
      location: from?.location ?? '',
      description: from?.description ?? '',
      reminders: from === undefined ? defaultReminderRows(newCalendar) : reminderRows(from.reminders),
      remindersPicked: from !== undefined,
      color: from?.color,
      scope: 'this',
      startDay: state.start.toISODate() as string,
      startTime: state.start.toFormat('HH:mm'),
      endDay: end.toISODate() as string,
      endTime: state.end.toFormat('HH:mm')
    }
  }
  const event = (state as { event: CalendarEvent }).event
  const start = event.isAllDay ? DateTime.fromISO(event.startDate, { zone: userZone }) : DateTime.fromISO(event.startDate, { setZone: true }).setZone(userZone)
  const end = event.isAllDay ? DateTime.fromISO(event.endDate, { zone: userZone }).minus({ days: 1 }) : DateTime.fromISO(event.endDate, { setZone: true }).setZone(userZone)
  return {
    title: event.title,
    isAllDay: event.isAllDay,
    repeat: repeatFormOf(rule, start, userZone) ?? defaultRepeat(start),
    repeatChanged: false,
    weekdaysPicked: false,
    calendar: calendarKeyOf(event),
    location: event.location ?? '',
    description: event.description ?? '',
    reminders: reminderRows(event.reminders),
    remindersPicked: true,
    color: event.color,
    scope: 'this',
    startDay: start.toISODate() as string,
    startTime: event.isAllDay ? '09:00' : start.toFormat('HH:mm'),
    endDay: end.toISODate() as string,
    endTime: event.isAllDay ? '10:00' : end.toFormat('HH:mm')
  }
}

/**
 * The form with the start moved: the end moves with it, keeping the event's length (in days, then
 * time, so an all-day event across a clock change keeps its days), and a repeat's weekday follows
 * the start until the person ticks days.
 */
function withStart (form: Form, startDay: string, startTime: string): Form {
  const before = DateTime.fromISO(`${form.startDay}T${form.startTime}`, { zone: userZone })
  const after = DateTime.fromISO(`${startDay}T${startTime}`, { zone: userZone })
  const end = DateTime.fromISO(`${form.endDay}T${form.endTime}`, { zone: userZone })
  const next = { ...form, startDay, startTime }
  // A field half typed (an empty date) moves nothing: the next full value moves from there.
  if (!before.isValid || !after.isValid) return next
  if (end.isValid && end >= before) {
    const moved = after.plus(end.diff(before, ['days', 'hours', 'minutes']))
    next.endDay = moved.toISODate() as string
    next.endTime = moved.toFormat('HH:mm')
  }
  const repeat = form.weekdaysPicked ? form.repeat : followStart(form.repeat, before, after)
  // An edited weekly series moved to another weekday repeats on that day, so its rule is written.
  if (repeat !== form.repeat) return { ...next, repeat, repeatChanged: form.repeatChanged || repeat.frequency === 'WEEKLY' }
  return next
}

/** The dialog's fields as dates in the API's forms, or the reason they are not valid. */
function draftFrom (form: Form): EventDraft | string {
  const minutes = form.reminders?.map((row) => row.custom ? customMinutes(row.text) : row.minutes)
  if (minutes?.includes(null) === true) return 'Enter the minutes of each custom reminder: a whole number from 0 to 40320 (4 weeks).'
  const reminders = minutes === undefined ? {} : { reminders: [...new Set(minutes as number[])].sort((a, b) => a - b).map((value) => ({ minutes: value })) }
  const common = { title: form.title.trim(), description: form.description.trim(), location: form.location.trim(), isAllDay: form.isAllDay, timeZone: userZone, frequency: form.repeat.frequency === '' ? null : form.repeat.frequency, color: form.color ?? null, ...reminders }
  if (form.isAllDay) {
    const start = DateTime.fromISO(form.startDay, { zone: userZone })
    const last = DateTime.fromISO(form.endDay, { zone: userZone })
    if (!start.isValid || !last.isValid) return 'Enter a start and an end date.'
    if (last < start) return 'The end date cannot be before the start date.'
    return { ...common, startDate: start.toISODate() as string, endDate: last.plus({ days: 1 }).toISODate() as string }
  }
  const start = DateTime.fromISO(`${form.startDay}T${form.startTime}`, { zone: userZone })
  const end = DateTime.fromISO(`${form.endDay}T${form.endTime}`, { zone: userZone })
  if (!start.isValid || !end.isValid) return 'Enter a start and an end.'
  if (end <= start) return 'The end must be after the start.'
  return { ...common, startDate: start.toISO({ suppressMilliseconds: true }) as string, endDate: end.toISO({ suppressMilliseconds: true }) as string }
}

/** The form for a new event with `event`'s fields, at its time (an occurrence at its own). */
function duplicateOf (event: CalendarEvent, rule: string[] | undefined): EventDialogState {
  const start = event.isAllDay ? DateTime.fromISO(event.startDate, { zone: userZone }) : DateTime.fromISO(event.startDate, { setZone: true }).setZone(userZone)
  const end = event.isAllDay ? DateTime.fromISO(event.endDate, { zone: userZone }) : DateTime.fromISO(event.endDate, { setZone: true }).setZone(userZone)
  return { kind: 'create', start, end, isAllDay: event.isAllDay, from: { event, rule } }
}

export function EventDialog (props: { state: EventDialogState, calendars: ShownCalendar[], onClose: () => void, onChange: (state: EventDialogState) => void }) {
  const { state } = props
  // The card and the form share the dialog, so Escape or Cancel on the form still gives focus back
  // to the event that opened the card.
  const view = state.kind === 'closed' ? undefined : `${state.kind}:${state.kind === 'create' ? state.start.toISO() ?? '' : state.event._id}`
  return (
    <Dialog open={state.kind !== 'closed'} labelledBy='event-title' onClose={props.onClose} view={view}>
      {state.kind === 'details' && (
        <EventDetails
          event={state.event} calendars={props.calendars} onClose={props.onClose}
          onEdit={() => props.onChange({ kind: 'edit', event: state.event })}
          onDuplicate={(rule) => props.onChange(duplicateOf(state.event, rule))}
        />
      )}
      {(state.kind === 'create' || state.kind === 'edit') && <EventForm key={view} state={state} calendars={props.calendars} onClose={props.onClose} />}
    </Dialog>
  )
}

/** The chosen calendar on a new event (the own calendar is no provider calendar: no calendarId). */
export function inCalendar (plan: EditPlan, calendar: string): EditPlan {
  return plan.kind === 'create' && calendar !== OWN_CALENDAR ? { ...plan, change: { ...plan.change, calendarId: calendar } } : plan
}

function RepeatFields (props: { form: RepeatForm, disabled: boolean, hintId?: string, onChange: (next: RepeatForm, field: keyof RepeatForm) => void }) {
  const { form } = props
  const set = <K extends keyof RepeatForm>(key: K, value: RepeatForm[K]) => props.onChange({ ...form, [key]: value }, key)
  const frequency = form.frequency
  return (
    <>
      <div class='field'>
        <label for='event-repeat'>Repeat</label>
        <select id='event-repeat' value={frequency} disabled={props.disabled} aria-describedby={props.hintId} onChange={(e) => set('frequency', (e.currentTarget as HTMLSelectElement).value as Frequency | '')}>
          <option value=''>Does not repeat</option>
          {FREQUENCIES.map((item) => <option key={item} value={item}>{FREQUENCY_LABELS[item]}</option>)}
        </select>
      </div>
      {frequency !== '' && !props.disabled && (
        <fieldset class='repeat'>
          <legend>Repeats</legend>
          <div class='field-inline'>
            <label for='event-interval'>Every</label>
            <input id='event-interval' type='number' min={1} max={999} required class='short-number' value={form.interval} onInput={(e) => set('interval', Number((e.currentTarget as HTMLInputElement).value))} />
            <span>{UNIT_LABELS[frequency][form.interval === 1 ? 0 : 1]}</span>
          </div>
          {frequency === 'WEEKLY' && (
            <fieldset class='weekdays'>
              <legend>On</legend>
              {WEEKDAYS.map((day) => (
                <span class='weekday-choice' key={day}>
                  <input
                    type='checkbox' id={`event-weekday-${day}`} checked={form.weekdays.includes(day)}
                    onChange={(e) => set('weekdays', (e.currentTarget as HTMLInputElement).checked ? [...form.weekdays, day] : form.weekdays.filter((item) => item !== day))}
                  />
                  <label for={`event-weekday-${day}`} title={WEEKDAY_NAMES[day]}><span aria-hidden='true'>{WEEKDAY_NAMES[day].slice(0, 2)}</span><span class='sr-only'>{WEEKDAY_NAMES[day]}</span></label>
                </span>
              ))}
            </fieldset>
          )}
          <fieldset class='ends'>
            <legend>Ends</legend>
            <div class='field-inline'>
              <input type='radio' id='event-ends-never' name='ends' checked={form.ends === 'never'} onChange={() => set('ends', 'never')} />
              <label for='event-ends-never'>Never</label>
            </div>
            <div class='field-inline'>
              <input type='radio' id='event-ends-until' name='ends' checked={form.ends === 'until'} onChange={() => set('ends', 'until')} />
              <label for='event-ends-until'>On</label>
              <input type='date' aria-label='Last date' value={form.until} disabled={form.ends !== 'until'} onInput={(e) => set('until', (e.currentTarget as HTMLInputElement).value)} />
            </div>
            <div class='field-inline'>
              <input type='radio' id='event-ends-count' name='ends' checked={form.ends === 'count'} onChange={() => set('ends', 'count')} />
              <label for='event-ends-count'>After</label>
              <input type='number' min={1} max={2000} class='short-number' aria-label='Number of times' value={form.count} disabled={form.ends !== 'count'} onInput={(e) => set('count', Number((e.currentTarget as HTMLInputElement).value))} />
              <span>times</span>
            </div>
          </fieldset>
        </fieldset>
      )}
    </>
  )
}

function EventForm (props: { state: Exclude<EventDialogState, { kind: 'closed' | 'details' }>, calendars: ShownCalendar[], onClose: () => void }) {
  const { state } = props
  const event = state.kind === 'edit' ? state.event : null
  const occurrence = event !== null && isOccurrence(event)
  const [series, setSeries] = useState<CalendarEvent | null>(null)
  const [form, setForm] = useState<Form>(() => formFrom(state, event?.recurrence?.rule, defaultCalendarOf(props.calendars)))
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  // An occurrence does not carry its series' rule: the series says how it repeats.
  useEffect(() => {
    if (event === null || !occurrence) return
    currentSource().get(seriesIdOf(event) as string).then((found) => {
      setSeries(found)
      const start = DateTime.fromISO(event.startDate, { setZone: !event.isAllDay, zone: event.isAllDay ? userZone : undefined }).setZone(userZone)
      setForm((previous) => previous.repeatChanged ? previous : { ...previous, repeat: repeatFormOf(found.recurrence?.rule, start, userZone) ?? defaultRepeat(start) })
    }).catch(() => setSeries(null))
  }, [event?._id])

  const set = <K extends keyof Form>(key: K, value: Form[K]) => setForm((previous) => ({ ...previous, [key]: value }))

  // A new event's calendar follows the list until the person picks one: opened before the
  // connected calendars were read, the dialog would otherwise keep the own calendar.
  // A duplicate keeps the calendar of the event it copies.
  const [calendarPicked, setCalendarPicked] = useState(state.kind === 'create' && state.from !== undefined)
  const defaultCalendar = defaultCalendarOf(props.calendars)
  useEffect(() => {
    if (event === null && !calendarPicked) setForm((previous) => previous.calendar === defaultCalendar ? previous : inCalendarOf(previous, defaultCalendar))
  }, [defaultCalendar])

  async function save (submitEvent: Event) {
    submitEvent.preventDefault()
    const draft = draftFrom(form)
    const problem = typeof draft === 'string' ? draft : repeatProblem(form.repeat, form.startDay)
    if (typeof draft === 'string' || problem !== null) {
      setError(problem)
      return
    }
    setBusy(true)
    let plan = event === null ? planCreate(draft, newEventId()) : planEdit(event, draft, occurrence ? form.scope : 'all', series, newEventId())
    const line = ruleOf(form.repeat, { isAllDay: form.isAllDay, zone: userZone })
    // A rule the form cannot show stays as it was unless a repeat field was changed.
    if (line !== null && (form.repeatChanged || event === null)) plan = withRule(plan, line)
    plan = inCalendar(plan, form.calendar)
    props.onClose()
    await applyPlan(plan)
  }

  async function remove () {
    if (event === null) return
    setBusy(true)
    props.onClose()
    await deleteEvent(event, occurrence ? form.scope : 'this')
  }

  const heading = event === null ? 'New event' : 'Edit event'
  const repeatDisabled = occurrence && form.scope === 'this'
  return (
    <form onSubmit={save} class='event-form'>
      <h2 id='event-title'>{heading}</h2>
      {event?.syncIssue !== undefined && <p class='sync-issue' id='event-sync-issue'><strong>Not synced.</strong> {event.syncIssue.message}</p>}
      <div class='field'>
        <label for='event-title-input'>Title</label>
        <input id='event-title-input' name='title' value={form.title} onInput={(e) => set('title', (e.currentTarget as HTMLInputElement).value)} placeholder='Add a title' autofocus />
      </div>
      <div class='field-inline'>
        <input id='event-all-day' type='checkbox' checked={form.isAllDay} onChange={(e) => set('isAllDay', (e.currentTarget as HTMLInputElement).checked)} />
        <label for='event-all-day'>All day</label>
      </div>
      <fieldset class='when'>
        <legend>When</legend>
        <div class='field'>
          <label for='event-start-day'>Start date</label>
          <input id='event-start-day' type='date' required value={form.startDay} onInput={(e) => { const value = (e.currentTarget as HTMLInputElement).value; setForm((previous) => withStart(previous, value, previous.startTime)) }} />
        </div>
        {!form.isAllDay && (
          <div class='field'>
            <label for='event-start-time'>Start time</label>
            <input id='event-start-time' type='time' required step={timeStep(form.startTime)} value={form.startTime} onInput={(e) => { const value = (e.currentTarget as HTMLInputElement).value; setForm((previous) => withStart(previous, previous.startDay, value)) }} />
          </div>
        )}
        <div class='field'>
          <label for='event-end-day'>End date</label>
          <input id='event-end-day' type='date' required value={form.endDay} onInput={(e) => set('endDay', (e.currentTarget as HTMLInputElement).value)} />
        </div>
        {!form.isAllDay && (
          <div class='field'>
            <label for='event-end-time'>End time</label>
            <input id='event-end-time' type='time' required step={timeStep(form.endTime)} value={form.endTime} onInput={(e) => set('endTime', (e.currentTarget as HTMLInputElement).value)} />
          </div>
        )}
        <p class='hint'>Times are in {userZone.replaceAll('_', ' ')}.</p>
      </fieldset>
      {props.calendars.length > 1 && (
        <div class='field'>
          <label for='event-calendar'>Calendar</label>
          <select id='event-calendar' value={form.calendar} disabled={event !== null} aria-describedby={event !== null ? 'event-calendar-hint' : undefined} onChange={(e) => { setCalendarPicked(true); const calendar = (e.currentTarget as HTMLSelectElement).value; setForm((previous) => inCalendarOf(previous, calendar)) }}>
            {props.calendars.map((calendar) => <option key={calendar.key} value={calendar.key}>{calendar.name}</option>)}
            {!props.calendars.some((calendar) => calendar.key === form.calendar) && <option value={form.calendar}>Another calendar</option>}
          </select>
          {event !== null && <p id='event-calendar-hint' class='hint'>An event stays in the calendar it was made in.</p>}
        </div>
      )}
      <RepeatFields form={form.repeat} disabled={repeatDisabled} hintId={repeatDisabled ? 'event-repeat-hint' : undefined} onChange={(repeat, field) => setForm((previous) => ({ ...previous, repeat, repeatChanged: true, weekdaysPicked: previous.weekdaysPicked || field === 'weekdays' }))} />
      {repeatDisabled && <p id='event-repeat-hint' class='hint'>To change how the series repeats, apply the change to all events or to the following ones.</p>}
      <LocationInput value={form.location} onInput={(value) => set('location', value)} />
      <div class='field'>
        <label for='event-description'>Description</label>
        <textarea id='event-description' rows={3} value={form.description} onInput={(e) => set('description', (e.currentTarget as HTMLTextAreaElement).value)} />
      </div>
      <ColorFields value={form.color} calendarColor={props.calendars.find((calendar) => calendar.key === form.calendar)?.color ?? 'var(--accent)'} onChange={(color) => set('color', color)} />
      <ReminderFields rows={form.reminders} calendarDefault={props.calendars.find((calendar) => calendar.key === form.calendar)?.defaultReminders ?? []} onChange={(rows) => setForm((previous) => ({ ...previous, reminders: rows, remindersPicked: true }))} />
      {occurrence && <ScopeChoice legend='This event repeats. Apply the change or the deletion to' scope={form.scope} onChange={(scope) => set('scope', scope)} />}
      {error !== null && <p role='alert' class='form-error'>{error}</p>}
      <div class='actions'>
        {event !== null && <button type='button' class='danger' disabled={busy} onClick={remove}>Delete</button>}
        <span class='spacer' />
        <button type='button' onClick={props.onClose}>Cancel</button>
        <button type='submit' class='primary' disabled={busy}>Save</button>
      </div>
    </form>
  )
}
