// The user's calendars beside the grid: each with its colour and name, and a checkbox that shows or
// hides its events (kept with the account); under them the Preferences button, outside the folded
// list so a phone reaches it too.
import { useState } from 'preact/hooks'
import { PreferencesDialog } from './PreferencesDialog.js'
import { useStore } from '../data/store.js'
import { hiddenCalendars, setCalendarShown, type ShownCalendar } from '../data/calendars.js'
import { providerName } from '../lib/caldav.js'

export function CalendarList (props: { calendars: ShownCalendar[] }) {
  const hidden = useStore(hiddenCalendars)
  // Open beside the grid on a wide screen; folded above it on a narrow one.
  const [open] = useState(() => typeof window.matchMedia !== 'function' || window.matchMedia('(min-width: 900px)').matches)
  const [preferencesOpen, setPreferencesOpen] = useState(false)
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
                  <span class='calendar-name'>{calendar.name}</span>
                  {calendar.provider !== null && <span class='calendar-provider'>{providerName(calendar.provider)}</span>}
                </label>
              </li>
            )
          })}
        </ul>
      </details>
      <button type='button' class='preferences-open' onClick={() => setPreferencesOpen(true)}>Preferences</button>
      <PreferencesDialog open={preferencesOpen} calendars={props.calendars} onClose={() => setPreferencesOpen(false)} />
    </aside>
  )
}
