// The events "+N more" stood for, as a list: choosing one opens it in the event dialog.
import { Dialog } from './Dialog.js'
import { eventTimeLabel } from '../data/preferences.js'
import type { CalendarEvent } from '../lib/events.js'
import { calendarStyle, useCalendarColors } from '../data/calendars.js'
import { eventClass } from './EventParts.js'

export type MoreDialogState = { label: string, events: CalendarEvent[] } | null

export function MoreDialog (props: { state: MoreDialogState, onOpen: (event: CalendarEvent) => void, onClose: () => void }) {
  const colors = useCalendarColors()
  const state = props.state
  return (
    <Dialog open={state !== null} labelledBy='more-title' onClose={props.onClose} class='dialog dialog-narrow'>
      {state !== null && (
        <div class='more-list'>
          <h2 id='more-title'>{state.label}</h2>
          <ul>
            {state.events.map((event) => (
              <li key={event._id}>
                <button type='button' class={`${eventClass(event)} more-item`} style={calendarStyle(event, colors)} onClick={() => { props.onClose(); props.onOpen(event) }}>
                  <span class='event-title'>{event.title === '' ? '(No title)' : event.title}</span>
                  <span class='sr-only'>, </span>
                  <span class='event-time'>{eventTimeLabel(event)}</span>
                </button>
              </li>
            ))}
          </ul>
          <div class='actions'><button type='button' onClick={props.onClose}>Close</button></div>
        </div>
      )}
    </Dialog>
  )
}
