// Search in the toolbar, as in Google Calendar: "/" focuses the field, typing (after a pause) or
// Enter lists the events found, grouped by day; the arrow keys move between them and choosing one
// opens it as a click in the grid does. Escape closes the results and puts focus back where it was
// before the field took it. On a phone the field hides behind a Search button (a magnifier).
import { useEffect, useRef, useState } from 'preact/hooks'
import { DateTime } from 'luxon'
import { createStore, useStore } from '../data/store.js'
import { searchEvents, searchFailure } from '../data/search.js'
import { userZone } from '../data/calendar.js'
import { calendarStyle, useCalendarColors } from '../data/calendars.js'
import { session } from '../data/session.js'
import { eventTimeLabel } from '../data/preferences.js'
import { eventToOpen, groupByDay, SEARCH_QUERY_WORDS, searchTermsOf } from '../lib/search.js'
import type { CalendarEvent } from '../lib/events.js'
import './search.css'

/** A pause in typing this long starts a search: one request for a word typed, not one per letter. */
const DEBOUNCE_MS = 250

/** Counts the "/" presses: the field takes the focus at each (the shortcut is the App's). */
const focusRequests = createStore(0)
export function focusSearch (): void {
  focusRequests.set((count) => count + 1)
}

type Results =
  | { kind: 'closed' }
  | { kind: 'loading', query: string, events: CalendarEvent[] }
  | { kind: 'shown', query: string, events: CalendarEvent[], next: string | null }
  | { kind: 'failed', query: string, events: CalendarEvent[], next: string | null, cursor: string | null, reason: string }

function countText (results: Results): string {
  switch (results.kind) {
    case 'closed': return ''
    case 'loading': return results.events.length === 0 ? 'Searching…' : 'Loading more results…'
    case 'failed': return results.reason
    case 'shown': {
      const count = results.events.length
      if (count === 0) return `No events match “${results.query}”`
      const found = `${count} ${count === 1 ? 'event' : 'events'} found`
      return results.next === null ? found : `${found}, more available`
    }
  }
}

function titleOf (event: CalendarEvent): string {
  return event.title === '' ? '(No title)' : event.title
}

export function Search (props: { onOpen: (event: CalendarEvent) => void }) {
  const [text, setText] = useState('')
  const [results, setResults] = useState<Results>({ kind: 'closed' })
  const [open, setOpen] = useState(false)
  const root = useRef<HTMLDivElement>(null)
  const input = useRef<HTMLInputElement>(null)
  /** Where focus was before the search took it, for Escape to give it back. */
  const returnTo = useRef<HTMLElement | null>(null)
  /** Only the answer to the latest request is shown: an earlier one may come back after it. */
  const latest = useRef(0)
  const typingTimer = useRef<ReturnType<typeof setTimeout> | null>(null)
  /** After "More results": the first new result takes the focus, which the vanished button had. */
  const focusResult = useRef<number | null>(null)
  const requests = useStore(focusRequests)
  const account = useStore(session)
  const colors = useCalendarColors()

  useEffect(() => {
    if (requests === 0) return
    setOpen(true)
    // The field appears on a phone with this render: it is focused once it is there.
    requestAnimationFrame(() => { input.current?.focus(); input.current?.select() })
  }, [requests])

  // Another account's (or the signed-out calendar's) results are not left on screen.
  const who = account.status === 'signedIn' ? account.userId : account.status
  useEffect(() => { close(false) }, [who])

  useEffect(() => () => { if (typingTimer.current !== null) clearTimeout(typingTimer.current) }, [])

  useEffect(() => {
    const index = focusResult.current
    if (index === null || results.kind === 'loading') return
    focusResult.current = null
    const buttons = resultButtons()
    const next = results.kind === 'failed' ? root.current?.querySelector<HTMLElement>('.search-retry') : buttons[index] ?? buttons.at(-1)
    next?.focus()
  }, [results])

  // A press outside the search (not in a dialog opened from it) closes the results.
  useEffect(() => {
    if (results.kind === 'closed') return
    const onDown = (press: PointerEvent) => {
      const target = press.target instanceof Element ? press.target : null
      if (target === null || root.current?.contains(target) === true || target.closest('dialog') !== null) return
      // A request still under way, or a pause still counting, would open them again.
      close(false)
    }
    document.addEventListener('pointerdown', onDown)
    return () => document.removeEventListener('pointerdown', onDown)
  }, [results.kind])

  async function run (query: string, cursor: string | null, before: CalendarEvent[]) {
    if (typingTimer.current !== null) clearTimeout(typingTimer.current)
    const terms = searchTermsOf(query)
    if (terms.length === 0) {
      latest.current++
      setResults({ kind: 'closed' })
      return
    }
    if (terms.length > SEARCH_QUERY_WORDS) {
      latest.current++
      setResults({ kind: 'failed', query, events: [], next: null, cursor: null, reason: `Search with at most ${SEARCH_QUERY_WORDS} words.` })
      return
    }
    const request = ++latest.current
    setResults({ kind: 'loading', query, events: before })
    try {
      const page = await searchEvents(query, cursor)
      if (request === latest.current) setResults({ kind: 'shown', query, events: [...before, ...page.events], next: page.next })
    } catch (error) {
      if (request === latest.current) setResults({ kind: 'failed', query, events: before, next: null, cursor, reason: searchFailure(error) })
    }
  }

  function typed (value: string) {
    setText(value)
    if (typingTimer.current !== null) clearTimeout(typingTimer.current)
    typingTimer.current = setTimeout(() => { run(value, null, []).catch(() => {}) }, DEBOUNCE_MS)
  }

  function close (giveFocusBack: boolean) {
    if (typingTimer.current !== null) clearTimeout(typingTimer.current)
    latest.current++
    setResults({ kind: 'closed' })
    if (!giveFocusBack) return
    setOpen(false)
    const back = returnTo.current
    returnTo.current = null
    // Nothing outside had the focus ("/" pressed on the page itself): the calendar takes it.
    const target = back !== null && back.isConnected ? back : document.getElementById('calendar')
    target?.focus()
  }

  function onFocusIn (focus: FocusEvent) {
    const from = focus.relatedTarget
    if (from instanceof HTMLElement && root.current?.contains(from) !== true && from.closest('dialog') === null) returnTo.current = from
  }

  function resultButtons (): HTMLButtonElement[] {
    return [...(root.current?.querySelectorAll<HTMLButtonElement>('.search-result') ?? [])]
  }

  function onKeyDown (press: KeyboardEvent) {
    if (press.key === 'Escape') {
      press.preventDefault()
      close(true)
      return
    }
    const target = press.target
    const buttons = resultButtons()
    const index = target instanceof HTMLButtonElement ? buttons.indexOf(target) : -1
    const inField = target === input.current
    if (press.key === 'ArrowDown' && (inField || index >= 0)) {
      press.preventDefault()
      buttons[inField ? 0 : Math.min(index + 1, buttons.length - 1)]?.focus()
    } else if (press.key === 'ArrowUp' && index >= 0) {
      press.preventDefault()
      if (index === 0) input.current?.focus()
      else buttons[index - 1]?.focus()
    } else if ((press.key === 'Home' || press.key === 'End') && index >= 0) {
      press.preventDefault()
      buttons[press.key === 'Home' ? 0 : buttons.length - 1]?.focus()
    } else if ((press.key === 'ArrowLeft' || press.key === 'ArrowRight') && index >= 0) {
      // Left and right would move the calendar behind the results (the page's shortcuts).
      press.preventDefault()
    }
  }

  const shown = results.kind === 'closed' ? null : results
  const days = shown === null ? [] : groupByDay(shown.events, userZone)
  return (
    <div class={`search${open ? ' search-open' : ''}`} ref={root} onKeyDown={onKeyDown} onFocusIn={onFocusIn}>
      <button type='button' class='search-toggle' aria-expanded={open} aria-controls='search-form' aria-label='Search' onClick={() => { if (open) close(true); else focusSearch() }}>
        <svg viewBox='0 0 16 16' width='16' height='16' aria-hidden='true' focusable='false'><circle cx='6.5' cy='6.5' r='4.75' fill='none' stroke='currentColor' stroke-width='1.75' /><path d='M10 10l4.5 4.5' stroke='currentColor' stroke-width='1.75' stroke-linecap='round' /></svg>
      </button>
      <form id='search-form' role='search' class='search-form' onSubmit={(submit) => { submit.preventDefault(); run(text, null, []).catch(() => {}) }}>
        <label for='search-input' class='sr-only'>Search events</label>
        <input
          id='search-input' ref={input} type='search' value={text} placeholder='Search events' autocomplete='off'
          aria-controls='search-results' aria-describedby='search-count'
          onInput={(e) => typed((e.currentTarget as HTMLInputElement).value)}
        />
      </form>
      {/* Always in the page, so the live region is there before its first words and they are read. */}
      <div id='search-results' class={shown === null ? 'search-results search-closed' : 'search-results'}>
        <p id='search-count' class={shown?.kind === 'failed' ? 'search-count form-error' : 'search-count'} role='status' aria-live='polite'>{countText(results)}</p>
        {shown?.kind === 'failed' && <button type='button' class='search-retry' onClick={() => { run(shown.query, shown.cursor, shown.events).catch(() => {}) }}>Retry</button>}
        {days.length > 0 && (
          <ul class='search-days' aria-label={`Search results for “${shown?.query ?? ''}”`}>
            {days.map((day) => {
              const date = DateTime.fromISO(day.day, { zone: userZone }).toLocaleString(DateTime.DATE_HUGE)
              return (
                <li key={day.day}>
                  <h3 class='search-day'>{date}</h3>
                  <ul>
                    {day.events.map((event) => (
                      <li key={event._id}>
                        <button type='button' class='search-result' style={calendarStyle(event, colors)} onClick={() => props.onOpen(eventToOpen(event))}>
                          <span class='search-dot' aria-hidden='true' />
                          <span class='search-time'>{eventTimeLabel(event)}</span>
                          <span class='sr-only'>, {date}, </span>
                          <span class='search-title'>{titleOf(event)}</span>
                          {event.location !== undefined && event.location !== '' && <><span class='sr-only'>, </span><span class='search-location'>{event.location}</span></>}
                        </button>
                      </li>
                    ))}
                  </ul>
                </li>
              )
            })}
          </ul>
        )}
        {shown?.kind === 'shown' && shown.next !== null && (
          <button type='button' class='search-more' onClick={() => { focusResult.current = shown.events.length; run(shown.query, shown.next, shown.events).catch(() => {}) }}>More results</button>
        )}
      </div>
    </div>
  )
}
