// Create or edit one event: title, all day, start and end, repeat, location, description; for an
// occurrence of a series, which occurrences a save or a delete applies to.
import { useEffect, useState } from 'preact/hooks'
import { DateTime } from 'luxon'
import { Dialog } from './Dialog.js'
import { LocationInput } from './LocationInput.js'
import { FREQUENCIES, frequencyOf, isOccurrence, newEventId, seriesIdOf, type ApplyTo, type CalendarEvent, type Frequency } from '../lib/events.js'
import { planCreate, planEdit, type EventDraft } from '../lib/series-edit.js'
import { applyPlan, currentSource, deleteEvent, userZone } from '../data/calendar.js'

export type EventDialogState =
  | { kind: 'closed' }
  | { kind: 'create', start: DateTime, end: DateTime, isAllDay: boolean }
  | { kind: 'edit', event: CalendarEvent }

interface Form {
  title: string
  isAllDay: boolean
  startDay: string
  startTime: string
  endDay: string
  endTime: string
  frequency: Frequency | ''
  location: string
  description: string
  scope: ApplyTo
}

const FREQUENCY_LABELS: Record<Frequency, string> = { DAILY: 'Every day', WEEKLY: 'Every week', MONTHLY: 'Every month', YEARLY: 'Every year' }

function formFrom (state: EventDialogState, frequency: Frequency | null): Form {
  if (state.kind === 'create') {
    const end = state.isAllDay ? state.end.minus({ days: 1 }) : state.end
    return {
      title: '',
      isAllDay: state.isAllDay,
      frequency: '',
      location: '',
      description: '',
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
    frequency: frequency ?? '',
    location: event.location ?? '',
    description: event.description ?? '',
    scope: 'this',
    startDay: start.toISODate() as string,
    startTime: event.isAllDay ? '09:00' : start.toFormat('HH:mm'),
    endDay: end.toISODate() as string,
    endTime: event.isAllDay ? '10:00' : end.toFormat('HH:mm')
  }
}

/** The dialog's fields as dates in the API's forms, or the reason they are not valid. */
function draftFrom (form: Form): EventDraft | string {
  const common = { title: form.title.trim(), description: form.description.trim(), location: form.location.trim(), isAllDay: form.isAllDay, timeZone: userZone, frequency: form.frequency === '' ? null : form.frequency }
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

export function EventDialog (props: { state: EventDialogState, onClose: () => void }) {
  return (
    <Dialog open={props.state.kind !== 'closed'} labelledBy='event-title' onClose={props.onClose}>
      {props.state.kind !== 'closed' && <EventForm state={props.state} onClose={props.onClose} />}
    </Dialog>
  )
}

function EventForm (props: { state: Exclude<EventDialogState, { kind: 'closed' }>, onClose: () => void }) {
  const { state } = props
  const event = state.kind === 'edit' ? state.event : null
  const occurrence = event !== null && isOccurrence(event)
  const [series, setSeries] = useState<CalendarEvent | null>(null)
  const [form, setForm] = useState<Form>(() => formFrom(state, frequencyOf(event?.recurrence?.rule)))
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  // An occurrence does not carry its series' rule: the series says how it repeats.
  useEffect(() => {
    if (event === null || !occurrence) return
    currentSource().get(seriesIdOf(event) as string).then((found) => {
      setSeries(found)
      const frequency = frequencyOf(found.recurrence?.rule)
      setForm((previous) => ({ ...previous, frequency: frequency ?? '' }))
    }).catch(() => setSeries(null))
  }, [event?._id])

  const set = <K extends keyof Form>(key: K, value: Form[K]) => setForm((previous) => ({ ...previous, [key]: value }))

  async function save (submitEvent: Event) {
    submitEvent.preventDefault()
    const draft = draftFrom(form)
    if (typeof draft === 'string') {
      setError(draft)
      return
    }
    setBusy(true)
    const plan = event === null ? planCreate(draft, newEventId()) : planEdit(event, draft, occurrence ? form.scope : 'all', series, newEventId())
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
          <input id='event-start-day' type='date' required value={form.startDay} onInput={(e) => set('startDay', (e.currentTarget as HTMLInputElement).value)} />
        </div>
        {!form.isAllDay && (
          <div class='field'>
            <label for='event-start-time'>Start time</label>
            <input id='event-start-time' type='time' required step={300} value={form.startTime} onInput={(e) => set('startTime', (e.currentTarget as HTMLInputElement).value)} />
          </div>
        )}
        <div class='field'>
          <label for='event-end-day'>End date</label>
          <input id='event-end-day' type='date' required value={form.endDay} onInput={(e) => set('endDay', (e.currentTarget as HTMLInputElement).value)} />
        </div>
        {!form.isAllDay && (
          <div class='field'>
            <label for='event-end-time'>End time</label>
            <input id='event-end-time' type='time' required step={300} value={form.endTime} onInput={(e) => set('endTime', (e.currentTarget as HTMLInputElement).value)} />
          </div>
        )}
        <p class='hint'>Times are in {userZone.replaceAll('_', ' ')}.</p>
      </fieldset>
      <div class='field'>
        <label for='event-repeat'>Repeat</label>
        <select id='event-repeat' value={form.frequency} disabled={repeatDisabled} aria-describedby={repeatDisabled ? 'event-repeat-hint' : undefined} onChange={(e) => set('frequency', (e.currentTarget as HTMLSelectElement).value as Frequency | '')}>
          <option value=''>Does not repeat</option>
          {FREQUENCIES.map((frequency) => <option key={frequency} value={frequency}>{FREQUENCY_LABELS[frequency]}</option>)}
        </select>
        {repeatDisabled && <p id='event-repeat-hint' class='hint'>To change how the series repeats, apply the change to all events or to the following ones.</p>}
      </div>
      <LocationInput value={form.location} onInput={(value) => set('location', value)} />
      <div class='field'>
        <label for='event-description'>Description</label>
        <textarea id='event-description' rows={3} value={form.description} onInput={(e) => set('description', (e.currentTarget as HTMLTextAreaElement).value)} />
      </div>
      {occurrence && (
        <fieldset class='scope'>
          <legend>This event repeats. Apply the change or the deletion to</legend>
          {([['this', 'This event'], ['thisAndFollowing', 'This and following events'], ['all', 'All events']] as const).map(([value, label]) => (
            <div class='field-inline' key={value}>
              <input type='radio' id={`scope-${value}`} name='scope' value={value} checked={form.scope === value} onChange={() => set('scope', value)} />
              <label for={`scope-${value}`}>{label}</label>
            </div>
          ))}
        </fieldset>
      )}
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
