// Pieces every view of events shares: an event's classes, how a click opens it, and the "+N more"
// button that opens a day's list.
import type { CalendarEvent } from '../lib/events.js'

/** Opens an event: its details card, or (a double click) its edit form. */
export type OpenEvent = (event: CalendarEvent, how?: 'details' | 'form') => void

/** Long enough for a person's double click, short enough that the card does not feel late. */
const DOUBLE_CLICK_MS = 250
let pendingClick: ReturnType<typeof setTimeout> | undefined

/**
 * A click shows the details card, a double click the form. The card is a modal dialog: opened on
 * the first click, it would take the second one (on whatever button sits under the pointer), so a
 * pointer's click waits to see whether another follows. Enter or Space (detail 0) open at once.
 */
export function openHandlers (event: CalendarEvent, open: OpenEvent, allowed: () => boolean = () => true) {
  return {
    onClick: (click: MouseEvent) => {
      clearTimeout(pendingClick)
      if (!allowed() || click.detail > 1) return
      if (click.detail === 0) open(event)
      else pendingClick = setTimeout(() => open(event), DOUBLE_CLICK_MS)
    },
    onDblClick: () => {
      clearTimeout(pendingClick)
      if (allowed()) open(event, 'form')
    }
  }
}

export function eventClass (event: CalendarEvent): string {
  return `event priority-${event.priority}`
}

export function MoreButton (props: { events: CalendarEvent[], count?: number, label: string, style?: Record<string, string>, onMore: (events: CalendarEvent[], label: string) => void }) {
  // The all-day row's count is of the events left out, and its list is the day's whole list.
  const count = props.count ?? props.events.length
  return (
    <button type='button' class='more' style={props.style} aria-label={`${count} more events, ${props.label}`} onClick={(click) => { click.stopPropagation(); props.onMore(props.events, props.label) }}>
      +{count} more
    </button>
  )
}
