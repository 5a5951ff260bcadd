// The all-day row of the day, 4-day and week grids: an event over several days is one bar across
// them, in lanes (lib/lanes.ts), with "+N more" past the lanes that fit and a "+" per day to add one.
import { useMemo } from 'preact/hooks'
import { DateTime } from 'luxon'
import { allDayOn } from '../lib/grid.js'
import type { CalendarEvent } from '../lib/events.js'
import { assignLanes, lanesUsed, limitLanes, spansOf } from '../lib/lanes.js'
import { userZone } from '../data/calendar.js'
import { calendarStyle } from '../data/calendars.js'
import { WriteMark } from './Safety.js'
import { eventClass, MoreButton, openHandlers, type OpenEvent } from './EventParts.js'

/** Lanes of the all-day row before "+N more": it sits above the hours, which need the room. */
const ALL_DAY_LANES = 3

export function AllDayRow (props: {
  days: DateTime[]
  events: CalendarEvent[]
  /** The grid's columns (the gutter, then the days), so the row lines up with the hours below. */
  columns: string
  colors: ReadonlyMap<string, string>
  onOpen: OpenEvent
  onMore: (events: CalendarEvent[], label: string) => void
  onCreate: (start: DateTime, end: DateTime, isAllDay: boolean) => void
}) {
  const laned = useMemo(() => assignLanes(spansOf(props.events.filter((event) => event.isAllDay), props.days, userZone)), [props.events, props.days])
  const allDay = limitLanes(laned, props.days.length, ALL_DAY_LANES)
  const allDayLanes = lanesUsed(allDay.shown, allDay.more, ALL_DAY_LANES)
  return (
    <div class='all-day-row' style={{ gridTemplateColumns: props.columns, gridTemplateRows: `repeat(${allDayLanes}, auto) auto` }}>
      <div class='gutter all-day-label' style={{ gridRow: '1 / -1' }}>All day</div>
      {props.days.map((day, index) => <div key={day.toISODate()} class='all-day-cell' style={{ gridColumn: `${index + 2}`, gridRow: '1 / -1' }} aria-hidden='true' />)}
      {allDay.shown.map((item) => (
        <div key={item.event._id} class='all-day-slot' style={{ gridColumn: `${item.first + 2} / span ${item.last - item.first + 1}`, gridRow: `${item.lane + 1}` }}>
          <button
            type='button' title={item.event.title === '' ? '(No title)' : item.event.title} style={calendarStyle(item.event, props.colors)} {...openHandlers(item.event, props.onOpen)}
            class={`${eventClass(item.event)} all-day-event${item.continuesBefore ? ' continues-before' : ''}${item.continuesAfter ? ' continues-after' : ''}`}
          >
            {item.event.title === '' ? '(No title)' : item.event.title}
          </button>
          <WriteMark event={item.event} />
        </div>
      ))}
      {allDay.more.map((entry) => {
        const day = props.days[entry.day] as DateTime
        const label = day.toLocaleString(DateTime.DATE_HUGE)
        return (
          <div key={`more-${entry.day}`} class='all-day-slot' style={{ gridColumn: `${entry.day + 2}`, gridRow: `${ALL_DAY_LANES}` }}>
            <MoreButton events={allDayOn(props.events, day, userZone)} count={entry.events.length} label={`all day, ${label}`} onMore={props.onMore} />
          </div>
        )
      })}
      {props.days.map((day, index) => {
        const label = day.toLocaleString(DateTime.DATE_HUGE)
        return (
          <button
            key={day.toISODate()} type='button' class='ghost all-day-add' style={{ gridColumn: `${index + 2}`, gridRow: `${allDayLanes + 1}` }}
            aria-label={`Add an all-day event on ${label}`} onClick={() => props.onCreate(day.startOf('day'), day.startOf('day').plus({ days: 1 }), true)}
          >+
          </button>
        )
      })}
    </div>
  )
}
