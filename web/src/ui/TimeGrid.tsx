// The day and week grids: an all-day row, then 24 hours with each timed event placed in its day
// column. Events are buttons (click or Enter to edit); dragging moves them, the bottom edge
// resizes them, and Alt+arrow keys do the same from the keyboard (15 minutes, or a day).
import { useEffect, useRef, useState } from 'preact/hooks'
import { DateTime } from 'luxon'
import { allDayOn, layoutDay, moveBy, snap, timeLabel, type Placed, type View } from '../lib/grid.js'
import { frequencyOf, isOccurrence, type CalendarEvent } from '../lib/events.js'
import { draftOf, planEdit } from '../lib/series-edit.js'
import { applyPlan, userZone } from '../data/calendar.js'
import { WriteMark } from './Safety.js'

export const HOUR_PX = 48
const PX_PER_MINUTE = HOUR_PX / 60

interface Drag {
  event: CalendarEvent
  mode: 'move' | 'resize'
  startX: number
  startY: number
  columnWidth: number
  minutes: number
  days: number
  moved: boolean
}

async function moveEvent (event: CalendarEvent, startMinutes: number, endMinutes: number): Promise<void> {
  const dates = moveBy(event, startMinutes, endMinutes)
  const draft = { ...draftOf(event, frequencyOf(event.recurrence?.rule)), ...dates }
  // A drag changes the one event that was dragged; the dialog offers the wider scopes.
  await applyPlan(planEdit(event, draft, 'this', null, ''))
}

function eventClass (event: CalendarEvent): string {
  return `event priority-${event.priority}`
}

function EventBlock (props: { placed: Placed, days: number, drag: Drag | null, onOpen: (event: CalendarEvent) => void, onDragStart: (drag: Drag) => void }) {
  const { placed, drag } = props
  const { event } = placed
  const dragging = drag !== null && drag.event._id === event._id && drag.moved
  const top = placed.top + (dragging && drag.mode === 'move' ? drag.minutes : 0)
  const height = placed.height + (dragging && drag.mode === 'resize' ? drag.minutes : 0)
  const width = 100 / placed.columns
  const style = {
    top: `${top * PX_PER_MINUTE}px`,
    height: `${Math.max(height * PX_PER_MINUTE - 2, 18)}px`,
    left: `calc(${placed.column * width}% + ${dragging && drag.mode === 'move' ? drag.days * drag.columnWidth : 0}px)`,
    width: `calc(${width}% - 4px)`
  }

  function pointerDown (pointer: PointerEvent, mode: Drag['mode']) {
    if (pointer.button !== 0) return
    const column = (pointer.currentTarget as HTMLElement).closest('.day-column') as HTMLElement | null
    props.onDragStart({ event, mode, startX: pointer.clientX, startY: pointer.clientY, columnWidth: column?.offsetWidth ?? 0, minutes: 0, days: 0, moved: false })
    pointer.stopPropagation()
  }

  function keyDown (key: KeyboardEvent) {
    if (!key.altKey) return
    const step = key.key === 'ArrowUp' ? -15 : key.key === 'ArrowDown' ? 15 : 0
    const dayStep = key.key === 'ArrowLeft' ? -1 : key.key === 'ArrowRight' ? 1 : 0
    if (step === 0 && dayStep === 0) return
    key.preventDefault()
    if (dayStep !== 0) moveEvent(event, dayStep * 1440, dayStep * 1440).catch(() => {})
    else if (key.shiftKey) moveEvent(event, 0, step).catch(() => {})
    else moveEvent(event, step, step).catch(() => {})
  }

  return (
    <div class={`${eventClass(event)}${dragging ? ' dragging' : ''}${height < 40 ? ' short' : height < 80 ? ' compact' : ''}`} style={style}>
      <button
        type='button' class='event-body'
        aria-keyshortcuts='Alt+ArrowUp Alt+ArrowDown Alt+ArrowLeft Alt+ArrowRight Alt+Shift+ArrowUp Alt+Shift+ArrowDown'
        onPointerDown={(pointer) => pointerDown(pointer, 'move')}
        onClick={() => { if (!dragging) props.onOpen(event) }}
        onKeyDown={keyDown}
      >
        {/* The hidden commas make the button's name read as a sentence: "Lunch, 12:30 – 13:30, Corner café". */}
        <span class='event-title'>{event.title === '' ? '(No title)' : event.title}</span>
        <span class='sr-only'>, </span>
        <span class='event-time'>{timeLabel(event, userZone)}</span>
        {isOccurrence(event) && <span class='sr-only'>, repeats</span>}
        {event.location !== undefined && event.location !== '' && <><span class='sr-only'>, </span><span class='event-location'>{event.location}</span></>}
      </button>
      <span class='resize-handle' aria-hidden='true' onPointerDown={(pointer) => pointerDown(pointer as PointerEvent, 'resize')} />
      <WriteMark event={event} />
    </div>
  )
}

export function TimeGrid (props: {
  view: View
  days: DateTime[]
  events: CalendarEvent[]
  loading: boolean
  onOpen: (event: CalendarEvent) => void
  onCreate: (start: DateTime, end: DateTime, isAllDay: boolean) => void
}) {
  const scroller = useRef<HTMLDivElement>(null)
  const [drag, setDrag] = useState<Drag | null>(null)
  const [now, setNow] = useState(() => DateTime.now().setZone(userZone))

  useEffect(() => {
    const timer = setInterval(() => setNow(DateTime.now().setZone(userZone)), 60_000)
    return () => clearInterval(timer)
  }, [])

  // Open on the working day rather than at midnight.
  useEffect(() => {
    if (scroller.current !== null) scroller.current.scrollTop = 7 * HOUR_PX
  }, [props.view])

  useEffect(() => {
    if (drag === null) return
    const move = (pointer: PointerEvent) => {
      const dy = pointer.clientY - drag.startY
      const dx = pointer.clientX - drag.startX
      const minutes = snap(dy / PX_PER_MINUTE)
      const days = drag.mode === 'move' && drag.columnWidth > 0 && props.view === 'week' ? Math.round(dx / drag.columnWidth) : 0
      const moved = drag.moved || Math.abs(dy) > 4 || Math.abs(dx) > 4
      if (minutes !== drag.minutes || days !== drag.days || moved !== drag.moved) setDrag({ ...drag, minutes, days, moved })
    }
    const up = () => {
      const done = drag
      // The click that ends a drag must not open the dialog: clear the drag after it.
      setTimeout(() => setDrag(null), 0)
      if (!done.moved || (done.minutes === 0 && done.days === 0)) return
      const shift = done.minutes + done.days * 1440
      const change = done.mode === 'move' ? moveEvent(done.event, shift, shift) : moveEvent(done.event, 0, done.minutes)
      change.catch(() => {})
    }
    window.addEventListener('pointermove', move)
    window.addEventListener('pointerup', up, { once: true })
    return () => {
      window.removeEventListener('pointermove', move)
      window.removeEventListener('pointerup', up)
    }
  }, [drag, props.view])

  function createAt (day: DateTime, pointer: MouseEvent) {
    if (pointer.target !== pointer.currentTarget) return
    const rect = (pointer.currentTarget as HTMLElement).getBoundingClientRect()
    const minutes = Math.min(snap((pointer.clientY - rect.top) / PX_PER_MINUTE, 30), 23 * 60)
    const start = day.startOf('day').plus({ minutes })
    props.onCreate(start, start.plus({ hours: 1 }), false)
  }

  const today = now.toISODate()
  const columns = `4rem repeat(${props.days.length}, minmax(0, 1fr))`
  return (
    <div class={`grid grid-${props.view}`} aria-busy={props.loading}>
      <div class='grid-head' style={{ gridTemplateColumns: columns }}>
        <div class='gutter' />
        {props.days.map((day) => (
          <div key={day.toISODate()} class={`day-head${day.toISODate() === today ? ' today' : ''}`}>
            <span class='weekday'>{day.toFormat('ccc')}</span> <span class='daynum'>{day.toFormat('d')}</span>
          </div>
        ))}
      </div>
      <div class='all-day-row' style={{ gridTemplateColumns: columns }}>
        <div class='gutter all-day-label'>All day</div>
        {props.days.map((day) => {
          const label = day.toLocaleString(DateTime.DATE_HUGE)
          return (
            <ul key={day.toISODate()} class='all-day-cell' aria-label={`All-day events, ${label}`}>
              {allDayOn(props.events, day, userZone).map((event) => (
                <li key={event._id}>
                  <button type='button' class={`${eventClass(event)} all-day-event`} onClick={() => props.onOpen(event)}>
                    {event.title === '' ? '(No title)' : event.title}
                  </button>
                  <WriteMark event={event} />
                </li>
              ))}
              <li class='all-day-add'>
                <button type='button' class='ghost' aria-label={`Add an all-day event on ${label}`} onClick={() => props.onCreate(day.startOf('day'), day.startOf('day').plus({ days: 1 }), true)}>+</button>
              </li>
            </ul>
          )
        })}
      </div>
      <div class='grid-scroll' ref={scroller}>
        <div class='grid-body' style={{ gridTemplateColumns: columns, height: `${24 * HOUR_PX}px` }}>
          <div class='gutter hours' aria-hidden='true'>
            {Array.from({ length: 24 }, (_, hour) => (
              <span key={hour} class='hour-label' style={{ top: `${hour * HOUR_PX}px` }}>{hour === 0 ? '' : DateTime.fromObject({ hour }).toFormat('HH:mm')}</span>
            ))}
          </div>
          {props.days.map((day) => {
            const placed = layoutDay(props.events, day, userZone)
            const isToday = day.toISODate() === today
            return (
              <section key={day.toISODate()} class='day-column' aria-label={day.toLocaleString(DateTime.DATE_HUGE)} onClick={(pointer) => createAt(day, pointer as MouseEvent)}>
                {isToday && <div class='now-line' style={{ top: `${now.diff(now.startOf('day'), 'minutes').minutes * PX_PER_MINUTE}px` }} aria-hidden='true' />}
                {placed.map((item) => (
                  <EventBlock key={item.event._id} placed={item} days={props.days.length} drag={drag} onOpen={props.onOpen} onDragStart={setDrag} />
                ))}
              </section>
            )
          })}
        </div>
      </div>
    </div>
  )
}
