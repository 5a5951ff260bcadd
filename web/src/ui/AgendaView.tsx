// The agenda: the coming events, day by day from the shown date (lib/agenda.ts says which days and
// in what order). Each page of days is read by itself through the same range queries as the grids
// (so a change, the stream and unsent writes reach it the same way), and "Show more" or scrolling
// to the end adds the next page. An event opens the same dialog as in the grids.
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { DateTime } from 'luxon'
import { agendaDays, agendaPages, type AgendaPage } from '../lib/agenda.js'
import { AGENDA_DAYS } from '../lib/grid.js'
import { eventTimeLabel } from '../data/preferences.js'
import { isOccurrence, type CalendarEvent } from '../lib/events.js'
import { useEvents, userZone, type Mode } from '../data/calendar.js'
import { calendarKeyOf, calendarStyle, hiddenCalendars, useCalendarColors } from '../data/calendars.js'
import { useStore } from '../data/store.js'
import { session } from '../data/session.js'
import { pendingWrites } from '../data/pending.js'
import { markOf } from '../lib/pending-writes.js'
import { WriteMark } from './Safety.js'
import { openHandlers, type OpenEvent } from './EventParts.js'
import './agenda.css'

function titleOf (event: CalendarEvent): string {
  return event.title === '' ? '(No title)' : event.title
}

/** Events drawn in the first task of a page (about two screenfuls), then in each task after it. */
const FIRST_DRAWN = 60
const DRAWN_PER_TASK = 80

function hasLocation (event: CalendarEvent): boolean {
  return event.location !== undefined && event.location !== ''
}

function AgendaPageList (props: { mode: Mode | null, page: AgendaPage, onOpen: OpenEvent, onCount: (key: string, count: number | null) => void }) {
  const { page, onCount } = props
  const key = page.first.toISODate() as string
  const colors = useCalendarColors()
  const hidden = useStore(hiddenCalendars)
  const { events: read, loading } = useEvents(props.mode, page.from, page.to)
  const events = useMemo(() => hidden.size === 0 ? read : read.filter((event) => !hidden.has(calendarKeyOf(event))), [read, hidden])
  const today = DateTime.now().setZone(userZone).toISODate() as string
  const days = useMemo(() => agendaDays(events, page, userZone, today), [events, page.first.toMillis(), page.days, today])
  const count = loading ? null : days.length
  useEffect(() => onCount(key, count), [key, count])
  // A crowded month (hundreds of events) is drawn a few dozen events per task, so no task holds
  // the page for long; later reads of the page draw it whole.
  const [limit, setLimit] = useState(FIRST_DRAWN)
  const total = useMemo(() => days.reduce((sum, day) => sum + day.events.length, 0), [days])
  useEffect(() => {
    if (total <= limit) return
    const timer = setTimeout(() => setLimit((current) => current + DRAWN_PER_TASK), 0)
    return () => clearTimeout(timer)
  }, [total, limit])
  const drawn = useMemo(() => {
    if (total <= limit) return days
    let left = limit
    const shown: typeof days = []
    for (const day of days) {
      if (left <= 0) break
      shown.push(day.events.length <= left ? day : { ...day, events: day.events.slice(0, left) })
      left -= day.events.length
    }
    return shown
  }, [days, total, limit])
  // The mark of an unsent change is drawn only on the events that have one: hundreds of marks,
  // each listening to the pending writes, would cost more than the list itself.
  const state = useStore(session)
  const pending = useStore(pendingWrites)
  const marked = (event: CalendarEvent) => state.status === 'signedIn' && (event.syncIssue !== undefined || markOf(pending, state.userId, event._id) !== null)
  return (
    <>
      {drawn.map((day) => {
        // Named in words for a screen reader (the big number and the short weekday are for the eye).
        const label = `${day.today ? 'Today, ' : ''}${day.day.toLocaleString(DateTime.DATE_HUGE)}`
        return (
          <section key={day.date} class={`agenda-day${day.today ? ' today' : ''}`} aria-labelledby={`agenda-${day.date}`}>
            <h3 id={`agenda-${day.date}`} class='agenda-date' aria-label={label}>
              {day.today && <span class='agenda-today'>Today</span>}
              <span class='agenda-daynum'>{day.day.toFormat('d')}</span>
              <span class='agenda-weekday'>{day.day.toFormat('ccc, LLL')}</span>
            </h3>
            <ul class='agenda-events'>
              {day.events.map((event) => (
                <li key={event._id} class='agenda-item'>
                  <button type='button' class={`agenda-event priority-${event.priority}`} style={calendarStyle(event, colors)} {...openHandlers(event, props.onOpen)}>
                    <span class='agenda-dot' aria-hidden='true' />
                    {/* The hidden commas make the name read as a sentence, as in the grid: "9:00 – 9:15, Standup, Room 4". */}
                    <span class='agenda-time'>{eventTimeLabel(event)}<span class='sr-only'>,</span></span>
                    <span class='event-title'>
                      <span class='agenda-title'>{titleOf(event)}</span>
                      {isOccurrence(event) && <span class='sr-only'>, repeats</span>}
                      {hasLocation(event) && <span class='sr-only'>,</span>}
                    </span>
                    {hasLocation(event) && <span class='agenda-location'>{event.location}</span>}
                  </button>
                  {marked(event) && <WriteMark event={event} />}
                </li>
              ))}
            </ul>
          </section>
        )
      })}
    </>
  )
}

export function AgendaView (props: { anchor: DateTime, mode: Mode | null, onOpen: OpenEvent, onNew: () => void }) {
  const anchorDate = props.anchor.toISODate() as string
  // Another date shows its first page again: the pages loaded belong to the date they were loaded from.
  const [loaded, setLoaded] = useState({ anchor: anchorDate, pages: 1 })
  const pageCount = loaded.anchor === anchorDate ? loaded.pages : 1
  // Days with events per page, by the page's first date (null while it is read).
  const [counts, setCounts] = useState<ReadonlyMap<string, number | null>>(new Map())
  const scroller = useRef<HTMLDivElement>(null)
  const end = useRef<HTMLDivElement>(null)
  useEffect(() => {
    if (scroller.current !== null) scroller.current.scrollTop = 0
  }, [anchorDate])
  const pages = useMemo(() => agendaPages(props.anchor, pageCount), [anchorDate, pageCount])
  const onCount = useCallback((key: string, count: number | null) => setCounts((previous) => {
    if (previous.get(key) === count) return previous
    return new Map(previous).set(key, count)
  }), [])
  const shown = pages.map((page) => counts.get(page.first.toISODate() as string) ?? null)
  const loading = shown.some((count) => count === null)
  const empty = !loading && shown.every((count) => count === 0)
  const last = pages[pages.length - 1] as AgendaPage
  const until = last.first.plus({ days: last.days - 1 }).toLocaleString(DateTime.DATE_MED)
  const more = useCallback(() => setLoaded((current) => ({ anchor: anchorDate, pages: (current.anchor === anchorDate ? current.pages : 1) + 1 })), [anchorDate])

  // Scrolling to the end of the list reads the next page. Only after a scroll: a short list on a
  // tall screen (or an empty month) asks with its button instead of reading page after page.
  const busy = useRef(loading)
  busy.current = loading
  useEffect(() => {
    const target = end.current
    if (target === null || typeof IntersectionObserver !== 'function') return
    const observer = new IntersectionObserver((entries) => {
      if (!entries.some((entry) => entry.isIntersecting) || busy.current) return
      if ((scroller.current?.scrollTop ?? 0) > 0) more()
    }, { root: scroller.current, rootMargin: '0px 0px 120px 0px' })
    observer.observe(target)
    return () => observer.disconnect()
  }, [more])

  return (
    <div class='agenda' ref={scroller} aria-busy={loading}>
      {pages.map((page) => <AgendaPageList key={page.first.toISODate()} mode={props.mode} page={page} onOpen={props.onOpen} onCount={onCount} />)}
      {empty && (
        <div class='agenda-empty'>
          <p>No events in the next {pageCount * AGENDA_DAYS} days</p>
          <button type='button' class='primary' onClick={props.onNew}>New event</button>
        </div>
      )}
      <div class='agenda-end' ref={end}>
        <p class='agenda-until'>{loading ? 'Loading…' : `Showing events until ${until}.`}</p>
        <button type='button' onClick={more} disabled={loading}>Show more</button>
      </div>
    </div>
  )
}
