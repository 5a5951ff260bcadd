// The month: its whole weeks, each a row of day cells with the events laid out in lanes across it
// (lib/lanes.ts): an event over several days is one bar from its first day to its last, broken at
// the week's edge; every event is one line, cut with an ellipsis. As many lanes as the row's height
// holds; a day with more says "+N more", which opens the day's list. A day's number opens that
// day; a press on a day's empty space creates an event there; an event opens the dialog.
import { useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks'
import { DateTime } from 'luxon'
import { eventsByDay, eventStart } from '../lib/grid.js'
import { assignLanes, limitLanes, spansOf, type Laned } from '../lib/lanes.js'
import type { CalendarEvent } from '../lib/events.js'
import { userZone } from '../data/calendar.js'
import { formatTime } from '../data/preferences.js'
import { calendarStyle, useCalendarColors } from '../data/calendars.js'
import { eventClass, openHandlers } from './EventParts.js'
import type { DaysViewProps } from './TimeGrid.js'
import './month.css'

/** Lanes drawn before the first measure of the rows (then as many as a row's height holds). */
const FIRST_LANES = 3

function titleOf (event: CalendarEvent): string {
  return event.title === '' ? '(No title)' : event.title
}

/** The days a bar stands for, for a screen reader: the bar's extent alone says it only to the eye. */
function spanText (event: CalendarEvent): string {
  const format = { weekday: 'long', day: 'numeric', month: 'long' } as const
  const start = eventStart(event, userZone)
  if (event.isAllDay) {
    const last = DateTime.fromISO(event.endDate, { zone: userZone }).minus({ days: 1 })
    return `all day, ${start.toLocaleString(format)} to ${last.toLocaleString(format)}`
  }
  const end = DateTime.fromISO(event.endDate, { setZone: true }).setZone(userZone)
  const time = { hour: '2-digit', minute: '2-digit' } as const
  return `${start.toLocaleString(format)} ${start.toLocaleString(time)} to ${end.toLocaleString(format)} ${end.toLocaleString(time)}`
}

/** How many lanes a week row holds: its height less the day's number, in lanes (sizes from the stylesheet). */
function lanesIn (week: HTMLElement): number {
  const style = getComputedStyle(week)
  const lane = parseFloat(style.getPropertyValue('--lane-px'))
  const head = parseFloat(style.getPropertyValue('--head-px'))
  if (!(lane > 0) || !(head >= 0)) return FIRST_LANES
  return Math.max(1, Math.floor((week.clientHeight - head - 2) / lane))
}

/** Bars draw across the row; an event of one day sits in its day's cell (and is read with it). */
function isBar (item: Laned): boolean {
  return item.first !== item.last || item.continuesBefore || item.continuesAfter
}

export function MonthView (props: DaysViewProps & {
  month: DateTime
  onDay: (day: DateTime) => void
}) {
  const colors = useCalendarColors()
  const body = useRef<HTMLDivElement>(null)
  const [maxLanes, setMaxLanes] = useState(FIRST_LANES)
  const weeks = useMemo(() => Array.from({ length: props.days.length / 7 }, (_, week) => props.days.slice(week * 7, week * 7 + 7)), [props.days])
  const lanedWeeks = useMemo(() => weeks.map((week) => assignLanes(spansOf(props.events, week, userZone))), [weeks, props.events])
  const today = DateTime.now().setZone(userZone).toISODate()

  // Measured before the first paint and again whenever the rows change size (window, sidebar).
  // The rows share the body's height, so the body is watched (a week's element is replaced when
  // the month changes); the row is measured anew each time.
  useLayoutEffect(() => {
    const element = body.current
    if (element === null) return
    const measure = () => {
      const week = element.querySelector<HTMLElement>('.month-week')
      if (week !== null) setMaxLanes(lanesIn(week))
    }
    measure()
    if (typeof ResizeObserver !== 'function') return
    const observer = new ResizeObserver(measure)
    observer.observe(element)
    return () => observer.disconnect()
  }, [weeks.length])

  // The day's whole list, read when asked for: a month of hundreds of events need not sort every day.
  const openDay = (day: DateTime, label: string) => props.onMore(eventsByDay(props.events, [day], userZone)[0] ?? [], label)

  function eventButton (item: Laned) {
    const { event } = item
    const bar = isBar(item)
    const timed = !event.isAllDay && !bar
    const classes = `${eventClass(event)} month-event${event.isAllDay ? ' all-day-event' : ''}${bar ? ' month-bar' : ''}${timed ? ' month-timed' : ''}${item.continuesBefore ? ' continues-before' : ''}${item.continuesAfter ? ' continues-after' : ''}`
    return (
      <button type='button' class={classes} style={calendarStyle(event, colors)} title={titleOf(event)} {...openHandlers(event, props.onOpen)}>
        {timed && <span class='month-time'>{formatTime(eventStart(event, userZone))} </span>}
        <span class='event-title'>{titleOf(event)}</span>
        {bar && <span class='sr-only'>, {spanText(event)}</span>}
      </button>
    )
  }

  return (
    <div class='month' aria-busy={props.loading}>
      <div class='month-head' aria-hidden='true'>
        {props.days.slice(0, 7).map((day) => <div key={day.weekday} class='month-weekday'>{day.toFormat('ccc')}</div>)}
      </div>
      <div class='month-body' ref={body} style={{ gridTemplateRows: `repeat(${weeks.length}, minmax(0, 1fr))` }}>
        {weeks.map((week, weekIndex) => {
          const { shown, more } = limitLanes(lanedWeeks[weekIndex] ?? [], week.length, maxLanes)
          return (
            <div key={week[0]?.toISODate()} class='month-week'>
              {week.map((day, column) => {
                const label = day.toLocaleString(DateTime.DATE_HUGE)
                const outside = day.month !== props.month.month
                const single = shown.filter((item) => item.first === column && !isBar(item))
                const hidden = more.find((entry) => entry.day === column)
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
                    {(single.length > 0 || hidden !== undefined) && (
                      <ul class='month-events'>
                        {single.map((item) => <li key={item.event._id} style={{ '--lane': item.lane }}>{eventButton(item)}</li>)}
                        {hidden !== undefined && (
                          <li style={{ '--lane': Math.max(1, maxLanes) - 1 }}>
                            <button type='button' class='more' aria-label={`${hidden.events.length} more events, ${label}`} onClick={() => openDay(day, label)}>
                              +{hidden.events.length} more
                            </button>
                          </li>
                        )}
                      </ul>
                    )}
                  </section>
                )
              })}
              {shown.some(isBar) && (
                <ul class='month-bars'>
                  {shown.filter(isBar).map((item) => (
                    <li key={item.event._id} style={{ '--lane': item.lane, '--first': item.first, '--span': item.last - item.first + 1 }}>{eventButton(item)}</li>
                  ))}
                </ul>
              )}
            </div>
          )
        })}
      </div>
    </div>
  )
}
