// The event form's reminders: none, or up to five, each a preset (5, 10, 30 minutes, 1 hour, 1 day
// before) or a custom number of minutes; and the one place that asks for the notification
// permission, from a click, while a reminder is set and the browser has not been asked.
import { useState } from 'preact/hooks'
import { useStore } from '../data/store.js'
import { askNotificationPermission, notificationPermission } from '../data/reminders.js'
import { canonicalReminders } from '../../../lib/events/reminders.js'
import { MAX_REMINDER_MINUTES, MAX_REMINDERS, offersPermission, reminderLabel, REMINDER_PRESETS, remindersInWords, withAnotherReminder, type Reminder } from '../lib/reminders.js'

/** A row as the form holds it: minutes, or the text of a custom value being typed. */
export interface ReminderRow {
  minutes: number
  custom: boolean
  text: string
}

/** The rows of an event's reminders; undefined stays undefined (the calendar's default). */
export function reminderRows (reminders: Array<{ minutes: number }> | undefined): ReminderRow[] | undefined {
  return reminders?.map(({ minutes }) => ({ minutes, custom: !(REMINDER_PRESETS as readonly number[]).includes(minutes), text: String(minutes) }))
}

/**
 * `calendarDefault`: what the event's calendar reminds of when the event keeps its default (rows
 * undefined); adding a reminder then starts from those, as Google Calendar's form turns the
 * default into the event's own.
 */
export function ReminderFields (props: { rows: ReminderRow[] | undefined, calendarDefault: readonly Reminder[], onChange: (rows: ReminderRow[]) => void }) {
  const permission = useStore(notificationPermission)
  const [asking, setAsking] = useState(false)
  const rows = props.rows ?? []
  const keepsDefault = props.rows === undefined
  const replace = (index: number, row: ReminderRow) => props.onChange(rows.map((item, at) => at === index ? row : item))
  const add = () => {
    const from = keepsDefault ? reminderRows(canonicalReminders(props.calendarDefault)) ?? [] : rows
    const [next] = withAnotherReminder(from).slice(from.length)
    props.onChange(next === undefined ? from : [...from, { minutes: next.minutes, custom: false, text: String(next.minutes) }])
  }
  const defaultInWords = remindersInWords(props.calendarDefault)
  const effective = keepsDefault ? props.calendarDefault.length : rows.length
  return (
    <fieldset class='reminders'>
      <legend>Reminders</legend>
      {rows.length === 0 && (
        <p class='hint' id='event-reminders-none'>
          {keepsDefault && defaultInWords !== '' ? `The calendar's default: ${defaultInWords}.` : 'No reminders.'}
        </p>
      )}
      {rows.map((row, index) => (
        <div class='field-inline reminder-row' key={index}>
          <select
            aria-label={`Reminder ${index + 1}`} value={row.custom ? 'custom' : String(row.minutes)}
            onChange={(e) => {
              const value = (e.currentTarget as HTMLSelectElement).value
              replace(index, value === 'custom' ? { ...row, custom: true } : { minutes: Number(value), custom: false, text: value })
            }}
          >
            {REMINDER_PRESETS.map((minutes) => <option key={minutes} value={String(minutes)}>{reminderLabel(minutes)}</option>)}
            <option value='custom'>Custom…</option>
          </select>
          {row.custom && (
            <>
              <input
                type='number' class='short-number' min={0} max={MAX_REMINDER_MINUTES} step={1} required
                aria-label={`Minutes before, reminder ${index + 1}`} value={row.text}
                onInput={(e) => { const text = (e.currentTarget as HTMLInputElement).value; replace(index, { ...row, text, minutes: Number(text) }) }}
              />
              <span>minutes before</span>
            </>
          )}
          <button type='button' class='icon' aria-label={`Remove reminder ${index + 1}`} onClick={() => props.onChange(rows.filter((_, at) => at !== index))}>×</button>
        </div>
      ))}
      {rows.length < MAX_REMINDERS && <button type='button' onClick={add}>Add reminder</button>}
      {offersPermission(permission, effective) && (
        <p class='hint'>
          This browser shows reminders while the calendar is open, once allowed.{' '}
          <button type='button' disabled={asking} onClick={() => { setAsking(true); askNotificationPermission().finally(() => setAsking(false)) }}>Allow notifications</button>
        </p>
      )}
      {permission === 'denied' && effective > 0 && <p class='hint'>Notifications are blocked for this site in the browser's settings: reminders are not shown here.</p>}
    </fieldset>
  )
}
