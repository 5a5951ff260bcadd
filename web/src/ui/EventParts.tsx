// Pieces every view of events shares: an event's classes, and the "+N more" button that opens a
// day's list.
import type { CalendarEvent } from '../lib/events.js'

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
