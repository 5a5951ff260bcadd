// An event's details card, what a click on an event shows before any form: its title, when it is,
// how it repeats, where, its description (links clickable, the rest drawn as text, never as
// markup), its calendar, and Edit, Duplicate and Delete. Delete on an occurrence of a series asks
// which occurrences first, with the form's own choice.
import { useEffect, useRef, useState } from 'preact/hooks'
import { isOccurrence, seriesIdOf, type ApplyTo, type CalendarEvent } from '../lib/events.js'
import { descriptionParts, repeatInWords, whenInWords } from '../lib/event-details.js'
import { repeatFormOf } from '../lib/recurrence-form.js'
import { eventStart } from '../lib/grid.js'
import { effectiveReminders, remindersInWords } from '../lib/reminders.js'
import { currentSource, deleteEvent, userZone } from '../data/calendar.js'
import { calendarKeyOf, OWN_CALENDAR, type ShownCalendar } from '../data/calendars.js'
import './details.css'

/** For an occurrence of a series: which occurrences a change or a deletion applies to. */
export function ScopeChoice (props: { legend: string, scope: ApplyTo, onChange: (scope: ApplyTo) => void }) {
  return (
    <fieldset class='scope'>
      <legend>{props.legend}</legend>
      {([['this', 'This event'], ['thisAndFollowing', 'This and following events'], ['all', 'All events']] as const).map(([value, label]) => (
        <div class='field-inline' key={value}>
          <input type='radio' id={`scope-${value}`} name='scope' value={value} checked={props.scope === value} onChange={() => props.onChange(value)} />
          <label for={`scope-${value}`}>{label}</label>
        </div>
      ))}
    </fieldset>
  )
}

/**
 * A button of the card that a double click's second press cannot reach: a slow double click on an
 * event opens the card after its first press, and the second would press whatever lies under it.
 */
function CardButton (props: { label: string, class?: string, autofocus?: boolean, onPress: () => void }) {
  return <button type='button' class={props.class} autofocus={props.autofocus} onClick={(click) => { if (click.detail <= 1) props.onPress() }}>{props.label}</button>
}

export function EventDetails (props: { event: CalendarEvent, calendars: ShownCalendar[], onEdit: () => void, onDuplicate: (rule: string[] | undefined) => void, onClose: () => void }) {
  const { event } = props
  const occurrence = isOccurrence(event)
  // An occurrence does not carry its series' rule: the series says how it repeats.
  const [rule, setRule] = useState<string[] | undefined>(event.recurrence?.rule)
  const [seriesRead, setSeriesRead] = useState(!occurrence)
  useEffect(() => {
    if (!occurrence) return
    currentSource().get(seriesIdOf(event) as string)
      .then((series) => setRule(series.recurrence?.rule))
      .catch(() => {})
      .finally(() => setSeriesRead(true))
  }, [event._id])
  const [confirming, setConfirming] = useState(false)
  const [scope, setScope] = useState<ApplyTo>('this')
  const scopeRef = useRef<HTMLDivElement>(null)
  useEffect(() => {
    if (confirming) scopeRef.current?.querySelector<HTMLInputElement>('input:checked')?.focus()
  }, [confirming])

  const title = event.title === '' ? '(No title)' : event.title
  const repeat = repeatInWords(repeatFormOf(rule, eventStart(event, userZone), userZone)) ?? (occurrence ? (seriesRead ? 'Repeats' : 'Repeats…') : null)
  const key = calendarKeyOf(event)
  const shownCalendar = props.calendars.find((item) => item.key === key)
  const calendar = shownCalendar?.name ?? (key === OWN_CALENDAR ? 'My calendar' : 'Another calendar')
  const reminders = remindersInWords(effectiveReminders(event, shownCalendar?.defaultReminders))
  const parts = descriptionParts(event.description ?? '')

  async function remove (applyTo: ApplyTo) {
    props.onClose()
    await deleteEvent(event, applyTo)
  }

  return (
    <div class='event-details'>
      <h2 id='event-title'>{title}</h2>
      <dl>
        <dt>When</dt>
        <dd class='details-when'>{whenInWords(event, userZone)}</dd>
        {repeat !== null && <><dt>Repeats</dt><dd class='details-repeat'>{repeat}</dd></>}
        {event.location !== undefined && event.location !== '' && <><dt>Where</dt><dd class='details-location'>{event.location}</dd></>}
        {parts.length > 0 && (
          <>
            <dt>Description</dt>
            <dd class='details-description'>
              {parts.map((part, index) => part.kind === 'text'
                ? part.text
                : <a key={index} href={part.href} target='_blank' rel='noopener noreferrer'>{part.text}</a>)}
            </dd>
          </>
        )}
        <dt>Calendar</dt>
        <dd class='details-calendar'>{calendar}</dd>
        {reminders !== '' && <><dt>Reminders</dt><dd class='details-reminders'>{reminders}{event.reminders === undefined && ' (the calendar\'s default)'}</dd></>}
      </dl>
      {event.syncIssue !== undefined && <p class='sync-issue'><strong>Not synced.</strong> {event.syncIssue.message}</p>}
      {confirming
        ? (
          <div ref={scopeRef}>
            <ScopeChoice legend='This event repeats. Delete' scope={scope} onChange={setScope} />
            <div class='actions'>
              <CardButton label='Delete' class='danger' onPress={() => { remove(scope).catch(() => {}) }} />
              <span class='spacer' />
              <CardButton label='Cancel' onPress={() => setConfirming(false)} />
            </div>
          </div>
          )
        : (
          <div class='actions'>
            <CardButton label='Edit' class='primary' autofocus onPress={props.onEdit} />
            <CardButton label='Duplicate' onPress={() => props.onDuplicate(rule)} />
            <CardButton label='Delete' class='danger' onPress={() => { if (occurrence) setConfirming(true); else remove('this').catch(() => {}) }} />
            <span class='spacer' />
            <CardButton label='Close' onPress={props.onClose} />
          </div>
          )}
    </div>
  )
}
