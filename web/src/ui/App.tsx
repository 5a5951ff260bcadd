// The page: the toolbar (dates, view, status, account), the calendar list, the grid or month, and
// the dialogs. The view and the shown date live in the URL (/day, /4days, /week, /month or /agenda,
// ?date=YYYY-MM-DD) so reloads and links keep them; a date that does not exist is corrected there.
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks'
import type { Ref } from 'preact'
import { DateTime } from 'luxon'
import { TimeGrid, eventKeyOf, type Moved } from './TimeGrid.js'
import { MonthView } from './MonthView.js'
import { AgendaView } from './AgendaView.js'
import { MoreDialog, type MoreDialogState } from './MoreDialog.js'
import { ShortcutsDialog } from './ShortcutsDialog.js'
import { focusSearch, Search } from './Search.js'
import { CalendarList } from './CalendarList.js'
import { useShortcuts } from './shortcuts.js'
import { EventDialog, type EventDialogState } from './EventDialog.js'
import { QuickAdd } from './QuickAdd.js'
import { AuthDialog } from './AuthDialog.js'
import type { CalDavDialogState } from './CalDavDialog.js'
import { ConnectionStatus, ReconnectBanner, useStatusAttention } from './Status.js'
import { UndoToast } from './Safety.js'
import { BillingBanner } from './BillingBanner.js'
import { lazyPart, useLazyPart } from './lazy.js'
import { useStore } from '../data/store.js'
import { preferences } from '../data/preferences.js'
import { WEEK_START_DAY } from '../../../lib/preferences.js'
import { session, signOut } from '../data/session.js'
import { dismissNotice, notices, notify, useEvents, userZone } from '../data/calendar.js'
import { refreshCoordinator, syncView } from '../data/sync.js'
import { liveConnections } from '../lib/stream-reactions.js'
import { microsoftConnectEnabled, providerEnabled, startConnect, startMicrosoftConnect } from '../data/provider.js'
import { providerStartFailure } from '../lib/oauth.js'
import { calendarColors, calendarKeyOf, hiddenCalendars, refreshCalendars, useCalendars } from '../data/calendars.js'
import { eventStart, newEventStart, readDateParam, step, stepUnit, viewDays, viewRange, viewTitle, type View } from '../lib/grid.js'
import { routeOf, type AuthDialogKind } from '../lib/auth-params.js'
import type { CalendarEvent } from '../lib/events.js'
// Last, so that on paper it has the final word over every view's own sheet.
import './print.css'

function anchorFromUrl (): DateTime {
  const param = readDateParam(new URLSearchParams(location.search).get('date'), userZone)
  return param.kind === 'valid' || param.kind === 'corrected' ? param.date : DateTime.now().setZone(userZone).startOf('day')
}

/** A `?date=` that names no day is corrected in the address bar (not left as it was), and said so. */
function correctDateInUrl (view: View): void {
  const param = readDateParam(new URLSearchParams(location.search).get('date'), userZone)
  if (param.kind !== 'corrected' && param.kind !== 'invalid') return
  const anchor = anchorFromUrl()
  history.replaceState(history.state, '', urlFor(view, anchor))
  notify(param.kind === 'corrected'
    ? `There is no ${param.written}: showing ${anchor.toLocaleString(DateTime.DATE_FULL)} instead.`
    : `"${param.written}" is not a date: showing today instead.`, 'error')
}

function routeView (): View {
  const route = routeOf(location.href).route
  return route === 'callback' ? 'day' : route
}

function urlFor (view: View, anchor: DateTime): string {
  const url = new URL(location.href)
  url.pathname = `/${view}`
  const today = DateTime.now().setZone(userZone).toISODate()
  if (anchor.toISODate() === today) url.searchParams.delete('date')
  else url.searchParams.set('date', anchor.toISODate() as string)
  return `${url.pathname}${url.search}${url.hash}`
}

export function Notices () {
  const list = useStore(notices)
  return (
    <div class='notices' role='status' aria-live='polite'>
      {list.map((notice) => (
        <p key={notice.id} class={`notice notice-${notice.tone}`}>
          {notice.text}
          {notice.tone === 'error' && <button type='button' class='notice-dismiss' aria-label={`Dismiss: ${notice.text}`} onClick={() => { dismissNotice(notice.id) }}>Dismiss</button>}
        </p>
      ))}
    </div>
  )
}

/** The phone's button for the rest of the toolbar's end (styles.css: a wide top bar has room for the
 * whole of it). The status line is behind it, so what needs attention there (offline, a change not
 * saved) marks the button and is said in its name: a phone user learns it without opening it. */
function MoreOptions (props: { open: boolean, buttonRef: Ref<HTMLButtonElement>, lastKnownAt: number | null, onToggle: () => void, onKeyDown: (press: KeyboardEvent) => void }) {
  const attention = useStatusAttention(props.lastKnownAt)
  return (
    <button type='button' class='toolbar-more' ref={props.buttonRef} aria-label={attention === null ? 'More options' : `More options, ${attention}`} aria-expanded={props.open} aria-controls='toolbar-end' onClick={props.onToggle} onKeyDown={props.onKeyDown}>
      <svg viewBox='0 0 16 16' width='16' height='16' fill='currentColor' aria-hidden='true' focusable='false'><circle cx='8' cy='3' r='1.5' /><circle cx='8' cy='8' r='1.5' /><circle cx='8' cy='13' r='1.5' /></svg>
      {attention !== null && <span class='toolbar-signal' aria-hidden='true' />}
    </button>
  )
}

// Connecting a CalDAV account (or entering its password again) is rare: its form is fetched when opened.
const calDavDialog = lazyPart(async () => (await import('./CalDavDialog.js')).CalDavDialog)

export function CalendarApp (props: { view: View, authDialog: AuthDialogKind | null, resetToken: string | null, onNavigate: (path: string) => void }) {
  const state = useStore(session)
  const connections = liveConnections(useStore(syncView))
  // Google's own connect hides once a Google connection exists; a CalDAV account can be added beside it.
  const googleConnected = connections.some((connection) => connection.provider === 'google')
  const microsoftConnected = connections.some((connection) => connection.provider === 'microsoft')
  const [anchor, setAnchor] = useState(anchorFromUrl)
  const [dialog, setDialog] = useState<EventDialogState>({ kind: 'closed' })
  const [auth, setAuth] = useState<AuthDialogKind | null>(props.authDialog)
  const [caldav, setCalDav] = useState<CalDavDialogState>(null)
  const CalDavDialog = useLazyPart(calDavDialog, caldav !== null, 'The CalDAV form', () => setCalDav(null))
  const [refreshing, setRefreshing] = useState(false)
  const [more, setMore] = useState<MoreDialogState>(null)
  const [shortcutsOpen, setShortcutsOpen] = useState(false)
  /** A phone's top bar: the status, Refresh, the account's connections and quick add are shown. */
  const [toolbarOpen, setToolbarOpen] = useState(false)
  const toolbarToggle = useRef<HTMLButtonElement>(null)
  const [focusKey, setFocusKey] = useState<string | null>(null)
  const [announcement, setAnnouncement] = useState('')
  const view = props.view

  const ended = state.status === 'signedOut' && state.ended === true
  useEffect(() => {
    if (!ended) return
    setAuth('login')
    notify('Your session has ended. Please sign in again.')
  }, [ended])

  // A connection belongs to the account: its dialog does not outlive the session.
  const signedIn = state.status === 'signedIn'
  useEffect(() => {
    if (!signedIn) setCalDav(null)
  }, [signedIn])

  useEffect(() => {
    correctDateInUrl(view)
    const onPop = () => {
      correctDateInUrl(routeView())
      setAnchor(anchorFromUrl())
    }
    window.addEventListener('popstate', onPop)
    return () => window.removeEventListener('popstate', onPop)
  }, [])

  const prefs = useStore(preferences)
  const firstDay = WEEK_START_DAY[prefs.weekStart]
  // Another zone or language chosen: the shown day anew (a luxon date keeps the locale it was made in).
  useEffect(() => setAnchor(anchorFromUrl()), [prefs.timeZone, prefs.locale])
  const days = useMemo(() => viewDays(anchor, view, firstDay), [anchor.toISODate(), anchor.locale, view, firstDay, prefs.timeZone])
  const range = useMemo(() => viewRange(anchor, view, firstDay), [anchor.toISODate(), view, firstDay, prefs.timeZone])
  // Until the session is known nothing is drawn: no demo events under a signed-in header.
  const mode = state.status === 'signedIn' ? 'account' : state.status === 'signedOut' ? 'local' : null
  const { events: allEvents, loading, error, lastKnownAt } = useEvents(mode, range.from, range.to)
  const calendars = useCalendars(state.status === 'signedIn' ? state.userId : null)
  // A connection added, importing its calendars one by one, or repaired: the list is read again.
  const connectionsSeen = connections.map((connection) => `${connection.connectionId}:${connection.status}:${connection.importProgress?.calendarsDone ?? ''}`).join(',')
  useEffect(() => { refreshCalendars().catch(() => {}) }, [connectionsSeen])
  const hidden = useStore(hiddenCalendars)
  useEffect(() => calendarColors.set(new Map(calendars.map((calendar) => [calendar.key, calendar.color]))), [calendars])
  const events = useMemo(() => hidden.size === 0 ? allEvents : allEvents.filter((event) => !hidden.has(calendarKeyOf(event))), [allEvents, hidden])

  const go = (next: DateTime, nextView: View = view) => {
    setAnchor(next)
    props.onNavigate(urlFor(nextView, next))
  }

  // A click shows the event's details; a double click (or Edit there) its form.
  const openEvent = useCallback((event: CalendarEvent, how: 'details' | 'form' = 'details') => setDialog(how === 'form' ? { kind: 'edit', event } : { kind: 'details', event }), [])
  const createEvent = useCallback((start: DateTime, end: DateTime, isAllDay: boolean) => setDialog({ kind: 'create', start, end, isAllDay }), [])
  const closeDialog = useCallback(() => setDialog({ kind: 'closed' }), [])
  const closeCalDav = useCallback(() => setCalDav(null), [])
  const openMore = useCallback((list: CalendarEvent[], label: string) => setMore({ events: list, label }), [])
  const closeMore = useCallback(() => setMore(null), [])
  const closeShortcuts = useCallback(() => setShortcutsOpen(false), [])

  // A keyboard move keeps the event in view and in focus, and says where it went.
  function moved (change: Moved) {
    const start = eventStart({ ...change.event, ...change }, userZone)
    const next = { ...change.event, ...change }
    const title = change.event.title === '' ? '(No title)' : change.event.title
    setAnnouncement(`${title} moved to ${start.toLocaleString(next.isAllDay ? DateTime.DATE_HUGE : DateTime.DATETIME_HUGE)}`)
    setFocusKey(eventKeyOf(change.event))
    if (!days.some((day) => day.toISODate() === start.toISODate())) go(start.startOf('day'))
  }
  const focused = useCallback(() => setFocusKey(null), [])

  // A search result opens as a click on it in the grid does, with the calendar on its day.
  function openFound (event: CalendarEvent) {
    go(eventStart(event, userZone).startOf('day'))
    openEvent(event)
  }

  useShortcuts((action) => {
    switch (action) {
      case 'create': return newEvent()
      case 'today': return go(DateTime.now().setZone(userZone).startOf('day'))
      case 'next': return go(step(anchor, view, 1))
      case 'previous': return go(step(anchor, view, -1))
      case 'day': case 'week': case 'month': case '4days': case 'agenda': return props.onNavigate(urlFor(action, anchor))
      case 'search': return focusSearch()
      case 'help': return setShortcutsOpen(true)
    }
  })

  /** New event at the next free hour; `title`: the quick add's text it could not read. */
  function newEvent (title?: string) {
    const base = newEventStart(anchor, DateTime.now().setZone(userZone))
    setDialog({ kind: 'create', start: base, end: base.plus({ minutes: prefs.defaultEventMinutes }), isAllDay: false, ...(title === undefined ? {} : { title }) })
  }

  /** A quick add made an event: the calendar shows its day, and says what was added. */
  function quickAdded (start: DateTime, title: string) {
    if (!days.some((day) => day.toISODate() === start.toISODate())) go(start.startOf('day'))
    setAnnouncement(`${title} added on ${start.toLocaleString(DateTime.DATETIME_HUGE)}`)
  }

  async function refresh () {
    setRefreshing(true)
    try {
      await refreshCoordinator.run({ silent: false })
    } finally {
      setRefreshing(false)
    }
  }

  // Escape folds them away again and the focus goes back to the button, as a menu's would.
  function foldToolbar (press: KeyboardEvent) {
    if (press.key !== 'Escape' || !toolbarOpen) return
    press.preventDefault()
    setToolbarOpen(false)
    toolbarToggle.current?.focus()
  }

  const title = viewTitle(anchor, view, firstDay)
  const unit = stepUnit(view)

  return (
    <div class='app'>
      <a class='skip-link' href='#calendar'>Skip to calendar</a>
      <header class='topbar'>
        <h1 class='brand'>Calendar</h1>
        <nav class='date-nav' aria-label='Dates'>
          <button type='button' onClick={() => go(DateTime.now().setZone(userZone).startOf('day'))}>Today</button>
          <button type='button' class='icon' aria-label={`Previous ${unit}`} onClick={() => go(step(anchor, view, -1))}>‹</button>
          <button type='button' class='icon' aria-label={`Next ${unit}`} onClick={() => go(step(anchor, view, 1))}>›</button>
          <h2 class='range-title' aria-live='polite'>{title}</h2>
        </nav>
        <nav class='view-switch' aria-label='View'>
          <a href={urlFor('day', anchor)} aria-current={view === 'day' ? 'page' : undefined} onClick={(e) => { e.preventDefault(); props.onNavigate(urlFor('day', anchor)) }}>Day</a>
          <a href={urlFor('4days', anchor)} aria-current={view === '4days' ? 'page' : undefined} onClick={(e) => { e.preventDefault(); props.onNavigate(urlFor('4days', anchor)) }}>4 days</a>
          <a href={urlFor('week', anchor)} aria-current={view === 'week' ? 'page' : undefined} onClick={(e) => { e.preventDefault(); props.onNavigate(urlFor('week', anchor)) }}>Week</a>
          <a href={urlFor('month', anchor)} aria-current={view === 'month' ? 'page' : undefined} onClick={(e) => { e.preventDefault(); props.onNavigate(urlFor('month', anchor)) }}>Month</a>
          <a href={urlFor('agenda', anchor)} aria-current={view === 'agenda' ? 'page' : undefined} onClick={(e) => { e.preventDefault(); props.onNavigate(urlFor('agenda', anchor)) }}>Agenda</a>
        </nav>
        <Search onOpen={openFound} />
        <MoreOptions open={toolbarOpen} buttonRef={toolbarToggle} lastKnownAt={lastKnownAt} onToggle={() => setToolbarOpen((open) => !open)} onKeyDown={foldToolbar} />
        <div id='toolbar-end' class={toolbarOpen ? 'toolbar-end toolbar-open' : 'toolbar-end'} onKeyDown={foldToolbar}>
          <ConnectionStatus lastKnownAt={lastKnownAt} />
          <button type='button' onClick={refresh} disabled={refreshing} aria-label='Refresh events'>{refreshing ? 'Refreshing…' : 'Refresh'}</button>
          {state.status === 'signedIn'
            ? (
              <div class='account'>
                <span class='account-email'>{state.email ?? 'Signed in'}</span>
                {providerEnabled && !googleConnected && <button type='button' onClick={() => { startConnect().catch(() => notify(providerStartFailure('google', globalThis.isSecureContext), 'error')) }}>Connect Google Calendar</button>}
                {microsoftConnectEnabled && !microsoftConnected && <button type='button' onClick={() => { startMicrosoftConnect().catch((error: unknown) => notify(`Connecting the Microsoft calendar could not start: ${error instanceof Error ? error.message : String(error)}`, 'error')) }}>Connect Microsoft calendar</button>}
                <button type='button' onClick={() => setCalDav({ connectionId: null })}>Connect CalDAV calendar</button>
                <button type='button' class='sign-out' onClick={() => { signOut().catch(() => {}) }}>Sign out</button>
              </div>
              )
            : state.status === 'signedOut'
              ? (
                <div class='account'>
                  <button type='button' class='sign-in' onClick={() => setAuth('login')}>Sign in</button>
                  <button type='button' onClick={() => setAuth('signup')}>Create account</button>
                </div>
                )
              : null}
          <QuickAdd calendars={calendars} onAdded={quickAdded} onUnread={(text) => newEvent(text)} />
          {/* A phone shows the plus alone; the name stays the words. */}
          <button type='button' class='primary new-event' aria-label='New event' onClick={() => newEvent()}><span class='new-event-plus' aria-hidden='true'>+</span><span class='new-event-words'>New event</span></button>
        </div>
      </header>
      <ReconnectBanner onPassword={(connectionId) => setCalDav({ connectionId })} />
      <BillingBanner signedIn={state.status === 'signedIn'} />
      <Notices />
      <UndoToast />
      <div class='workspace'>
        <CalendarList calendars={calendars} />
        {/* Drawn anew when the language, clock, zone or week changes: every label and layout follows. */}
        <main id='calendar' tabIndex={-1} key={`${prefs.locale} ${prefs.timeFormat} ${prefs.timeZone} ${prefs.weekStart}`}>
          {error !== null && <p role='alert' class='form-error'>Events could not be loaded: {error.message}</p>}
          {view === 'month'
            ? <MonthView month={anchor} days={days} events={events} loading={loading} onOpen={openEvent} onCreate={createEvent} onMore={openMore} onDay={(day) => go(day, 'day')} />
            : view === 'agenda'
              ? <AgendaView anchor={anchor} mode={mode} onOpen={openEvent} onNew={() => newEvent()} />
              : <TimeGrid view={view} days={days} events={events} loading={loading} onOpen={openEvent} onCreate={createEvent} onMore={openMore} onMoved={moved} focusKey={focusKey} onFocused={focused} />}
        </main>
      </div>
      <p class='sr-only' aria-live='polite'>{announcement}</p>
      <EventDialog state={dialog} calendars={calendars} onClose={closeDialog} onChange={setDialog} />
      <MoreDialog state={more} onOpen={openEvent} onClose={closeMore} />
      <ShortcutsDialog open={shortcutsOpen} onClose={closeShortcuts} />
      {CalDavDialog !== undefined && <CalDavDialog state={caldav} onClose={closeCalDav} />}
      <AuthDialog kind={auth} resetToken={props.resetToken} onSwitch={setAuth} onSignedIn={() => setAuth(null)} />
    </div>
  )
}
