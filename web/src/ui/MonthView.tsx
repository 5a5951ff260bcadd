// The month: its whole weeks, each day listing what fits (all-day events first, then by start)
// and "+N more" for the rest. A day's number opens that day; a press on a day's empty space
// creates an event there; an event opens the dialog.
import { useMemo } from 'preact/hooks'
import { DateTime } from 'luxon'
import { eventsByDay, timeLabel } from '../lib/grid.js'
import { userZone } from '../data/calendar.js'
import { calendarStyle, useCalendarColors } from '../data/calendars.js'
import { eventClass, type DaysViewProps } from './TimeGrid.js'

/** Events a day cell shows before "+N more" takes the last line. */
const MONTH_CELL_EVENTS = 3

export function MonthView (props: DaysViewProps & {
  month: DateTime
  onDay: (day: DateTime) => void
}) {
  const colors = useCalendarColors()
  const byDay = useMemo(() => eventsByDay(props.events, props.days, userZone), [props.events, props.days])
  const today = DateTime.now().setZone(userZone).toISODate()
  const weeks = Array.from({ length: props.days.length / 7 }, (_, week) => props.days.slice(week * 7, week * 7 + 7))
  return (
    <div class='month' aria-busy={props.loading}>
      <div class='month-head' aria-hidden='true'>
        {props.days.slice(0, 7).map((day) => <div key={day.weekday} class='month-weekday'>{day.toFormat('ccc')}</div>)}
      </div>
      <div class='month-body' style={{ gridTemplateRows: `repeat(${weeks.length}, minmax(0, 1fr))` }}>
        {weeks.map((week) => (
          <div key={week[0]?.toISODate()} class='month-week'>
            {week.map((day) => {
              const index = props.days.indexOf(day)
              const events = byDay[index] ?? []
              // "+N more" takes the place of the last event when the day overflows.
              const shown = events.length > MONTH_CELL_EVENTS ? events.slice(0, MONTH_CELL_EVENTS - 1) : events
              const label = day.toLocaleString(DateTime.DATE_HUGE)
              const outside = day.month !== props.month.month
              return (
                <section
                  key={day.toISODate()} aria-label={label}
                  class={`month-day${outside ? ' outside' : ''}${day.toISODate() === today ? ' today' : ''}`}
                  onClick={(click) => {
                    if (click.target !== click.currentTarget) return
                    const start = day.startOf('day').set({ hour: 9 })
                    props.onCreate(start, start.plus({ hours: 1 }), false)
                  }}
                >
                  <button type='button' class='month-daynum' aria-label={`Open ${label}`} onClick={() => props.onDay(day)}>{day.toFormat('d')}</button>
                  <ul class='month-events'>
                    {shown.map((event) => (
                      <li key={event._id}>
                        <button type='button' class={`${eventClass(event)} month-event${event.isAllDay ? ' all-day-event' : ''}`} style={calendarStyle(event, colors)} onClick={() => props.onOpen(event)}>
                          {!event.isAllDay && <span class='month-time'>{timeLabel(event, userZone).split(' – ')[0]} </span>}
                          <span class='event-title'>{event.title === '' ? '(No title)' : event.title}</span>
                        </button>
                      </li>
                    ))}
                    {shown.length < events.length && (
                      <li>
                        <button type='button' class='more' aria-label={`${events.length - shown.length} more events, ${label}`} onClick={() => props.onMore(events.slice(shown.length), label)}>
                          +{events.length - shown.length} more
                        </button>
                      </li>
                    )}
                  </ul>
                </section>
              )
            })}
          </div>
        ))}
      </div>
    </div>
  )
}
