// The day, 4-day and week grids: an all-day row (an event over several days is one bar across them, in
// lanes), then 24 hours with each timed event placed in its day column. Events are buttons (click
// or Enter to edit); dragging moves them, the bottom edge resizes them, and Alt+arrow keys do the
// same from the keyboard (15 minutes, or a day). Pressing on empty time and dragging creates an
// event of the dragged span; a click creates an hour. Where more events overlap than fit side by
// side, the rest are gathered into "+N more". From the keyboard, the grid's time slots are one
// tab stop (a roving focus over half hours): the arrow keys move between times and days, Enter
// creates an hour there.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks'
import { DateTime } from 'luxon'
import { DAY_MINUTES, layoutDays, limitColumns, moveBy, snap, SNAP_MINUTES, type Placed, type View } from '../lib/grid.js'
import { eventTimeLabel, formatTime, hourLabel, preferences } from '../data/preferences.js'
import { workingBand } from '../lib/preferences.js'
import { useStore } from '../data/store.js'
import { frequencyOf, isOccurrence, seriesIdOf, type CalendarEvent } from '../lib/events.js'
import { draftOf, planEdit } from '../lib/series-edit.js'
import { applyPlan, userZone } from '../data/calendar.js'
import { WriteMark } from './Safety.js'
import { calendarStyle, useCalendarColors } from '../data/calendars.js'
import { AllDayRow } from './AllDayRow.js'
import { eventClass, MoreButton, openHandlers, type OpenEvent } from './EventParts.js'
import './month.css'

const HOUR_PX = 48
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

/** A press on empty time being dragged: minutes from the day's midnight. */
interface Sweep {
  day: DateTime
  top: number
  from: number
  to: number
  moved: boolean
}

/** The keyboard's place in the grid: a day of the view (its index) and minutes from midnight. */
interface Slot {
  day: number
  minutes: number
}

const SLOT_MINUTES = 30
/** A zone's short name as luxon writes it in English: "GMT+1", "GMT+5:30". */
const ZONE_NAME = { locale: 'en-US' } as const
const LAST_SLOT = DAY_MINUTES - SLOT_MINUTES

/** Where the keyboard starts: now in today's column, or 09:00 on the view's first day. */
function firstSlot (days: DateTime[], now: DateTime): Slot {
  const today = days.findIndex((day) => day.toISODate() === now.toISODate())
  if (today === -1) return { day: 0, minutes: 9 * 60 }
  return { day: today, minutes: Math.min(Math.floor((now.hour * 60 + now.minute) / SLOT_MINUTES) * SLOT_MINUTES, LAST_SLOT) }
}

/** The slot after a key press, or null when the key is not the grid's (or leaves the view: then the page's shortcut moves it). */
function slotAfter (key: string, slot: Slot, days: number): Slot | 'previousView' | 'nextView' | null {
  switch (key) {
    case 'ArrowUp': return { ...slot, minutes: Math.max(0, slot.minutes - SLOT_MINUTES) }
    case 'ArrowDown': return { ...slot, minutes: Math.min(LAST_SLOT, slot.minutes + SLOT_MINUTES) }
    case 'Home': return { ...slot, minutes: 0 }
    case 'End': return { ...slot, minutes: LAST_SLOT }
    case 'ArrowLeft': return slot.day === 0 ? 'previousView' : { ...slot, day: slot.day - 1 }
    case 'ArrowRight': return slot.day >= days - 1 ? 'nextView' : { ...slot, day: slot.day + 1 }
    default: return null
  }
}

/** Where a moved event went, for the view to follow it and say so. */
export interface Moved {
  event: CalendarEvent
  startDate: string
  endDate: string
}

async function moveEvent (event: CalendarEvent, startMinutes: number, endMinutes: number): Promise<void> {
  const dates = moveBy(event, startMinutes, endMinutes)
  const draft = { ...draftOf(event, frequencyOf(event.recurrence?.rule)), ...dates }
  // A drag changes the one event that was dragged; the dialog offers the wider scopes.
  await applyPlan(planEdit(event, draft, 'this', null, ''))
}

/** What finds an event's block again after a change re-read it (an edited occurrence may get a stored id). */
export function eventKeyOf (event: CalendarEvent): string {
  const seriesId = seriesIdOf(event)
  return seriesId !== null && event.originalStartDate !== undefined ? `${seriesId}@${event.originalStartDate}` : event._id
}

export type GridView = Exclude<View, 'month' | 'agenda'>

// Beyond these, a title shrinks to a letter or two (a week column is about 140 px at 1280 px,
// 45 px on a phone, where overlapping events of a week go to "+N more" at once).
const MAX_COLUMNS: Record<GridView, { wide: number, narrow: number }> = { day: { wide: 4, narrow: 2 }, '4days': { wide: 3, narrow: 1 }, week: { wide: 2, narrow: 1 } }
const NARROW = '(max-width: 700px)'

function useNarrow (): boolean {
  const [narrow, setNarrow] = useState(() => typeof window.matchMedia === 'function' && window.matchMedia(NARROW).matches)
  useEffect(() => {
    if (typeof window.matchMedia !== 'function') return
    const query = window.matchMedia(NARROW)
    const changed = () => setNarrow(query.matches)
    query.addEventListener('change', changed)
    return () => query.removeEventListener('change', changed)
  }, [])
  return narrow
}

function EventBlock (props: { placed: Placed, days: number, colors: ReadonlyMap<string, string>, drag: Drag | null, onOpen: OpenEvent, onDragStart: (drag: Drag) => void, onMoved: (moved: Moved) => void }) {
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
    width: `calc(${width}% - 4px)`,
    ...calendarStyle(event, props.colors)
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
    const [startShift, endShift] = dayStep !== 0 ? [dayStep * 1440, dayStep * 1440] : key.shiftKey ? [0, step] : [step, step]
    // Once the move is stored, the view follows the event (to another day or week), so the range
    // read there holds it, and the page says where it went.
    moveEvent(event, startShift, endShift).then(() => props.onMoved({ event, ...moveBy(event, startShift, endShift) })).catch(() => {})
  }

  return (
    <div class={`${eventClass(event)}${dragging ? ' dragging' : ''}${height < 40 ? ' short' : height < 80 ? ' compact' : ''}`} style={style}>
      <button
        type='button' class='event-body' data-event-key={eventKeyOf(event)}
        aria-keyshortcuts='Alt+ArrowUp Alt+ArrowDown Alt+ArrowLeft Alt+ArrowRight Alt+Shift+ArrowUp Alt+Shift+ArrowDown'
        onPointerDown={(pointer) => pointerDown(pointer, 'move')}
        {...openHandlers(event, props.onOpen, () => !dragging)}
        onKeyDown={keyDown}
      >
        {/* The hidden commas make the button's name read as a sentence: "Lunch, 12:30 – 13:30, Corner café". */}
        <span class='event-title'>{event.title === '' ? '(No title)' : event.title}</span>
        <span class='sr-only'>, </span>
        <span class='event-time'>{eventTimeLabel(event)}</span>
        {isOccurrence(event) && <span class='sr-only'>, repeats</span>}
        {event.location !== undefined && event.location !== '' && <><span class='sr-only'>, </span><span class='event-location'>{event.location}</span></>}
      </button>
      <span class='resize-handle' aria-hidden='true' onPointerDown={(pointer) => pointerDown(pointer as PointerEvent, 'resize')} />
      <WriteMark event={event} />
    </div>
  )
}

/** What every view of days (the grids and the month) is drawn from, and what it reports back. */
export interface DaysViewProps {
  days: DateTime[]
  events: CalendarEvent[]
  loading: boolean
  onOpen: OpenEvent
  onCreate: (start: DateTime, end: DateTime, isAllDay: boolean) => void
  onMore: (events: CalendarEvent[], label: string) => void
}

export function TimeGrid (props: DaysViewProps & {
  view: GridView
  onMoved: (moved: Moved) => void
  /** The block to give focus to once it is drawn (after a keyboard move), by eventKeyOf. */
  focusKey: string | null
  onFocused: () => void
}) {
  const scroller = useRef<HTMLDivElement>(null)
  const colors = useCalendarColors()
  const prefs = useStore(preferences)
  const narrow = useNarrow()
  const [drag, setDrag] = useState<Drag | null>(null)
  const [sweep, setSweep] = useState<Sweep | null>(null)
  const [now, setNow] = useState(() => DateTime.now().setZone(userZone))
  const [slot, setSlot] = useState<Slot>(() => firstSlot(props.days, now))
  const slotButton = useRef<HTMLButtonElement>(null)
  /**
   * The slot moved from the keyboard: its (new) button takes the focus once drawn. A date: it
   * left the view whose first day that is, and takes the focus in the next view.
   */
  const slotFocus = useRef<boolean | string>(false)

  useEffect(() => {
    const timer = setInterval(() => setNow(DateTime.now().setZone(userZone)), 60_000)
    return () => clearInterval(timer)
  }, [])

  // Open on the working day rather than at midnight.
  useEffect(() => {
    if (scroller.current !== null) scroller.current.scrollTop = 7 * HOUR_PX
  }, [props.view])

  // A block re-drawn elsewhere (another day, a re-read id) takes the focus its key asked for.
  useLayoutEffect(() => {
    if (props.focusKey === null || scroller.current === null) return
    const block = scroller.current.querySelector<HTMLElement>(`[data-event-key="${CSS.escape(props.focusKey)}"]`)
    if (block === null) return
    if (document.activeElement !== block) block.focus()
    props.onFocused()
  })

  useLayoutEffect(() => {
    const wanted = slotFocus.current
    if (wanted === false || slotButton.current === null) return
    // The page's shortcut has not moved the view yet (the grid may draw before it does).
    if (typeof wanted === 'string' && props.days[0]?.toISODate() === wanted) return
    slotFocus.current = false
    if (document.activeElement !== slotButton.current) slotButton.current.focus()
  })

  // Listened to from the press itself, as the sweep is: a quick click's release can come before
  // any effect runs, and a drag armed after it would move the event at the next click anywhere.
  function dragFrom (start: Drag) {
    let current = start
    setDrag(current)
    const view = props.view
    const move = (pointer: PointerEvent) => {
      const dy = pointer.clientY - current.startY
      const dx = pointer.clientX - current.startX
      const minutes = snap(dy / PX_PER_MINUTE)
      const days = current.mode === 'move' && current.columnWidth > 0 && view !== 'day' ? Math.round(dx / current.columnWidth) : 0
      const moved = current.moved || Math.abs(dy) > 4 || Math.abs(dx) > 4
      if (minutes === current.minutes && days === current.days && moved === current.moved) return
      current = { ...current, minutes, days, moved }
      setDrag(current)
    }
    const end = (pointer: PointerEvent) => {
      window.removeEventListener('pointermove', move)
      window.removeEventListener('pointerup', end)
      window.removeEventListener('pointercancel', end)
      const done = current
      // The click that ends a drag must not open the dialog: clear the drag after it.
      setTimeout(() => setDrag(null), 0)
      // A cancelled pointer (the browser took it for a scroll) moves nothing.
      if (pointer.type === 'pointercancel' || !done.moved || (done.minutes === 0 && done.days === 0)) return
      const shift = done.minutes + done.days * 1440
      const change = done.mode === 'move' ? moveEvent(done.event, shift, shift) : moveEvent(done.event, 0, done.minutes)
      change.catch(() => {})
    }
    window.addEventListener('pointermove', move)
    window.addEventListener('pointerup', end)
    window.addEventListener('pointercancel', end)
  }

  // Listened to from the press itself: a quick click's release can come before any effect runs.
  function sweepFrom (day: DateTime, pointer: PointerEvent) {
    if (pointer.button !== 0 || pointer.target !== pointer.currentTarget) return
    const rect = (pointer.currentTarget as HTMLElement).getBoundingClientRect()
    const from = (pointer.clientY - rect.top) / PX_PER_MINUTE
    const top = pointer.clientY
    pointer.preventDefault()
    let current: Sweep = { day, top, from, to: from, moved: false }
    const minutesAt = (event: PointerEvent) => Math.min(Math.max(0, from + (event.clientY - top) / PX_PER_MINUTE), DAY_MINUTES)
    const move = (event: PointerEvent) => {
      const to = minutesAt(event)
      current = { ...current, to, moved: current.moved || Math.abs(to - from) * PX_PER_MINUTE > 4 }
      if (current.moved) setSweep(current)
    }
    const up = (event: PointerEvent) => {
      window.removeEventListener('pointermove', move)
      setSweep(null)
      const to = minutesAt(event)
      const midnight = day.startOf('day')
      if (current.moved || Math.abs(to - from) * PX_PER_MINUTE > 4) {
        // The dragged span, whichever way it went, snapped to quarter hours.
        const first = snap(Math.min(from, to), SNAP_MINUTES)
        const last = Math.max(snap(Math.max(from, to), SNAP_MINUTES), first + SNAP_MINUTES)
        props.onCreate(midnight.plus({ minutes: first }), midnight.plus({ minutes: Math.min(last, DAY_MINUTES) }), false)
      } else {
        const start = midnight.plus({ minutes: Math.min(snap(from, 30), 23 * 60) })
        props.onCreate(start, start.plus({ minutes: prefs.defaultEventMinutes }), false)
      }
    }
    window.addEventListener('pointermove', move)
    window.addEventListener('pointerup', up, { once: true })
  }

  const placedByDay = useMemo(() => layoutDays(props.events, props.days, userZone), [props.events, props.days])
  const maxColumns = MAX_COLUMNS[props.view][narrow ? 'narrow' : 'wide']
  const today = now.toISODate()
  // The corner names the zone as "GMT+1" in every language: luxon's format strings were English
  // until the preferences set its default locale (en-GB would say "CET", de-DE "MEZ").
  const zoneLabel = now.toFormat('ZZZZ', ZONE_NAME)
  const columns = `var(--gutter) repeat(${props.days.length}, minmax(0, 1fr))`
  const firstDay = (props.days[0] as DateTime).setZone(userZone).startOf('day')
  const second = prefs.secondTimeZone === null || prefs.secondTimeZone === userZone ? null : { zone: prefs.secondTimeZone, label: firstDay.setZone(prefs.secondTimeZone).toFormat('ZZZZ', ZONE_NAME) }
  const working = (day: DateTime) => {
    const band = workingBand(prefs.workingHours, day)
    return band === null ? null : <div class='working-hours' aria-hidden='true' style={{ top: `${band.top * PX_PER_MINUTE}px`, height: `${band.height * PX_PER_MINUTE}px` }} />
  }
  // The slot keeps its place in the view (a week's Thursday becomes the day view's one day).
  const slotDay = Math.min(slot.day, props.days.length - 1)
  const slotDate = props.days[slotDay] as DateTime
  const slotStart = slotDate.startOf('day').plus({ minutes: slot.minutes })
  const slotBusy = (placedByDay[slotDay] ?? []).filter((item) => item.top < slot.minutes + SLOT_MINUTES && item.top + item.height > slot.minutes)
  const slotName = `${slotDate.toLocaleString(DateTime.DATE_HUGE)}, ${formatTime(slotStart)}${slotBusy.length === 0 ? '' : `, during ${slotBusy.map((item) => item.event.title === '' ? '(No title)' : item.event.title).join(', ')}`}`

  function slotKey (key: KeyboardEvent) {
    if (key.altKey || key.ctrlKey || key.metaKey || key.shiftKey) return
    const next = slotAfter(key.key, { day: slotDay, minutes: slot.minutes }, props.days.length)
    if (next === null) return
    if (next === 'previousView' || next === 'nextView') {
      // A held key stops at the edge (the page's shortcuts ignore repeats).
      if (key.repeat) {
        key.preventDefault()
        return
      }
      // Past the view's edge: the page's own ← / → shortcut shows the previous or next day or
      // week (the key is left to it), and the slot goes on from that view's far side.
      slotFocus.current = (props.days[0] as DateTime).toISODate() ?? true
      setSlot({ day: next === 'previousView' ? props.days.length - 1 : 0, minutes: slot.minutes })
      return
    }
    key.preventDefault()
    slotFocus.current = true
    setSlot(next)
  }
  return (
    <div class={`grid grid-${props.view}${second === null ? '' : ' two-zones'}`} aria-busy={props.loading}>
      <div class='grid-head' style={{ gridTemplateColumns: columns }}>
        <div class='gutter zone-label' title={second === null ? userZone : `${second.zone}, ${userZone}`}>
          {second !== null && <span class='zone-second'><span class='sr-only'>Second column of times in {second.zone.replaceAll('_', ' ')}, </span>{second.label}</span>}
          <span><span class='sr-only'>Times in {userZone.replaceAll('_', ' ')}, </span>{zoneLabel}</span>
        </div>
        {props.days.map((day) => (
          <div key={day.toISODate()} class={`day-head${day.toISODate() === today ? ' today' : ''}`}>
            <span class='weekday'>{day.toFormat('ccc')}</span> <span class='daynum'>{day.toFormat('d')}</span>
          </div>
        ))}
      </div>
      <AllDayRow days={props.days} events={props.events} columns={columns} colors={colors} onOpen={props.onOpen} onMore={props.onMore} onCreate={props.onCreate} />
      <div class='grid-scroll' ref={scroller}>
        <div class='grid-body' style={{ gridTemplateColumns: columns, height: `${24 * HOUR_PX}px` }}>
          {/* One element for the slot the keyboard is on, drawn anew (its own key) at each move, so
              a screen reader says each slot it reaches; a pointer goes through it to the column. */}
          <button
            key={`${slotDate.toISODate()}T${slot.minutes}`} ref={slotButton} type='button' class='slot'
            style={{ gridColumn: `${slotDay + 2} / span 1`, top: `${slot.minutes * PX_PER_MINUTE}px`, height: `${SLOT_MINUTES * PX_PER_MINUTE}px` }}
            aria-label={slotName} aria-describedby='slot-help' aria-keyshortcuts='ArrowUp ArrowDown ArrowLeft ArrowRight Home End Enter'
            onKeyDown={slotKey}
            onClick={() => props.onCreate(slotStart, slotStart.plus({ minutes: prefs.defaultEventMinutes }), false)}
          >
            <span class='slot-time' aria-hidden='true'>+ {formatTime(slotStart)}</span>
          </button>
          <p id='slot-help' class='sr-only'>Arrow keys move between times and days; Enter adds an event there.</p>
          <div class='gutter hours' aria-hidden='true'>
            {Array.from({ length: 24 }, (_, hour) => (
              <span key={hour} class='hour-label' style={{ top: `${hour * HOUR_PX}px` }}>{hour === 0 ? '' : hourLabel(DateTime.fromObject({ hour }))}</span>
            ))}
            {/* The same instants in the second zone, beside the first (its own offset may be a half hour). */}
            {second !== null && Array.from({ length: 24 }, (_, hour) => (
              <span key={`second-${hour}`} class='hour-label hour-second' style={{ top: `${hour * HOUR_PX}px` }}>{hour === 0 ? '' : formatTime(firstDay.plus({ hours: hour }).setZone(second.zone))}</span>
            ))}
          </div>
          {props.days.map((day, index) => {
            const { shown, more } = limitColumns(placedByDay[index] ?? [], maxColumns)
            const isToday = day.toISODate() === today
            const label = day.toLocaleString(DateTime.DATE_HUGE)
            const swept = sweep !== null && sweep.moved && sweep.day.toISODate() === day.toISODate() ? sweep : null
            return (
              <section key={day.toISODate()} class='day-column' aria-label={label} onPointerDown={(pointer) => sweepFrom(day, pointer as PointerEvent)}>
                {working(day)}
                {isToday && <div class='now-line' style={{ top: `${now.diff(now.startOf('day'), 'minutes').minutes * PX_PER_MINUTE}px` }} aria-hidden='true' />}
                {shown.map((item) => (
                  <EventBlock key={item.event._id} placed={item} days={props.days.length} colors={colors} drag={drag} onOpen={props.onOpen} onDragStart={dragFrom} onMoved={props.onMoved} />
                ))}
                {more.map((band) => (
                  <MoreButton
                    key={band.top} events={band.events} onMore={props.onMore}
                    label={`from ${formatTime(day.startOf('day').plus({ minutes: band.top }))}, ${label}`}
                    style={{ top: `${band.top * PX_PER_MINUTE}px`, height: `${Math.max(band.height * PX_PER_MINUTE - 2, 18)}px`, left: `calc(${(maxColumns - 1) * 100 / maxColumns}% )`, width: `calc(${100 / maxColumns}% - 4px)` }}
                  />
                ))}
                {swept !== null && (
                  <div
                    class='sweep' aria-hidden='true'
                    style={{ top: `${snap(Math.min(swept.from, swept.to)) * PX_PER_MINUTE}px`, height: `${Math.max(SNAP_MINUTES, snap(Math.abs(swept.to - swept.from))) * PX_PER_MINUTE}px` }}
                  />
                )}
              </section>
            )
          })}
        </div>
      </div>
    </div>
  )
}
