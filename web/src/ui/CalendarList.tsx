// The user's calendars beside the grid: each with its colour and name, and a checkbox that shows or
// hides its events (kept with the account); under them the Preferences button, outside the folded
// list so a phone reaches it too.
import { useState } from 'preact/hooks'
import { useStore } from '../data/store.js'
import { hiddenCalendars, setCalendarShown, type ShownCalendar } from '../data/calendars.js'
import { session } from '../data/session.js'
import { providerName } from '../lib/caldav.js'
import { lazyPart, useLazyPart } from './lazy.js'
import { exportCalendar, importCalendar } from '../data/ics.js'

const preferencesDialog = lazyPart(async () => (await import('./PreferencesDialog.js')).PreferencesDialog)

/** A calendar's file: Export .ics downloads it, Import .ics picks a file and adds its events. */
// The picker's name is "Import .ics", the calendar its description: a label naming the calendar
// would make it a second control labelled with the calendar's name beside the checkbox.
function CalendarFile (props: { calendar: ShownCalendar, nameId: string, onDone: (sentence: string) => void }) {
  const { key, name } = props.calendar
  const failed = (error: unknown) => props.onDone(`${name}: ${error instanceof Error ? error.message : String(error)}`)
  return (
    <span class='calendar-file'>
      <button type='button' onClick={() => { exportCalendar(key, name).catch(failed) }}>Export .ics<span class='sr-only'> of {name}</span></button>
      <label class='file-pick'>
        Import .ics
        <input
          type='file' accept='.ics,text/calendar' aria-describedby={props.nameId} onChange={(change) => {
            const input = change.currentTarget as HTMLInputElement
            const file = input.files?.[0]
            input.value = ''
            if (file !== undefined) importCalendar(key, name, file).then(props.onDone, failed)
          }}
        />
      </label>
    </span>
  )
}

export function CalendarList (props: { calendars: ShownCalendar[] }) {
  const hidden = useStore(hiddenCalendars)
  // Open beside the grid on a wide screen; folded above it on a narrow one.
  const [open] = useState(() => typeof window.matchMedia !== 'function' || window.matchMedia('(min-width: 900px)').matches)
  const [preferencesOpen, setPreferencesOpen] = useState(false)
  const signedIn = useStore(session).status === 'signedIn'
  const [fileStatus, setFileStatus] = useState('')
  const PreferencesDialog = useLazyPart(preferencesDialog, preferencesOpen, 'Preferences', () => setPreferencesOpen(false))
  return (
    <aside class='sidebar' aria-label='Calendars'>
      <details class='calendars' open={open}>
        <summary>Calendars</summary>
        <ul>
          {props.calendars.map((calendar, index) => {
            const id = `calendar-${index}`
            return (
              <li key={calendar.key} class='calendar-item' style={{ '--calendar': calendar.color }}>
                <input type='checkbox' id={id} checked={!hidden.has(calendar.key)} onChange={(change) => setCalendarShown(calendar.key, (change.currentTarget as HTMLInputElement).checked)} />
                <label for={id}>
                  <span class='calendar-name' id={`${id}-name`}>{calendar.name}</span>
                  {calendar.provider !== null && <span class='calendar-provider'>{providerName(calendar.provider)}</span>}
                </label>
                {signedIn && <CalendarFile calendar={calendar} nameId={`${id}-name`} onDone={setFileStatus} />}
              </li>
            )
          })}
        </ul>
        <p role='status' class='calendar-file-status'>{fileStatus}</p>
      </details>
      <button type='button' class='preferences-open' onClick={() => setPreferencesOpen(true)}>Preferences</button>
      {PreferencesDialog !== undefined && <PreferencesDialog open={preferencesOpen} calendars={props.calendars} onClose={() => setPreferencesOpen(false)} />}
    </aside>
  )
}
