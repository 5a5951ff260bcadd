// The page: the toolbar (dates, view, status, account), the grid, and the dialogs. The view and
// the shown date live in the URL (/day or /week, ?date=YYYY-MM-DD) so reloads and links keep them.
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks'
import { DateTime } from 'luxon'
import { TimeGrid } from './TimeGrid.js'
import { EventDialog, type EventDialogState } from './EventDialog.js'
import { AuthDialog } from './AuthDialog.js'
import { CalDavDialog, type CalDavDialogState } from './CalDavDialog.js'
import { ConnectionStatus, ReconnectBanner } from './Status.js'
import { BillingBanner } from './BillingBanner.js'
import { useStore } from '../data/store.js'
import { session, signOut } from '../data/session.js'
import { notices, notify, useEvents, userZone } from '../data/calendar.js'
import { refreshCoordinator, syncView } from '../data/sync.js'
import { providerEnabled, startConnect } from '../data/provider.js'
import { step, viewDays, viewRange, type View } from '../lib/grid.js'
import type { AuthDialogKind } from '../lib/auth-params.js'
import type { CalendarEvent } from '../lib/events.js'

function anchorFromUrl (): DateTime {
  const date = new URLSearchParams(location.search).get('date')
  const parsed = date === null ? null : DateTime.fromISO(date, { zone: userZone })
  return parsed?.isValid === true ? parsed : DateTime.now().setZone(userZone).startOf('day')
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
      {list.map((notice) => <p key={notice.id} class={`notice notice-${notice.tone}`}>{notice.text}</p>)}
    </div>
  )
}

export function CalendarApp (props: { view: View, authDialog: AuthDialogKind | null, resetToken: string | null, onNavigate: (path: string) => void }) {
  const state = useStore(session)
  const connections = Object.values(useStore(syncView).connections)
  // Google's own connect hides once a Google connection exists; a CalDAV account can be added beside it.
  const googleConnected = connections.some((connection) => connection.provider === 'google' && connection.status !== 'DISCONNECTED')
  const [anchor, setAnchor] = useState(anchorFromUrl)
  const [dialog, setDialog] = useState<EventDialogState>({ kind: 'closed' })
  const [auth, setAuth] = useState<AuthDialogKind | null>(props.authDialog)
  const [caldav, setCalDav] = useState<CalDavDialogState>(null)
  const [refreshing, setRefreshing] = useState(false)
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
    const onPop = () => setAnchor(anchorFromUrl())
    window.addEventListener('popstate', onPop)
    return () => window.removeEventListener('popstate', onPop)
  }, [])

  const days = useMemo(() => viewDays(anchor, view), [anchor.toISODate(), view])
  const range = useMemo(() => viewRange(anchor, view), [anchor.toISODate(), view])
  const mode = state.status === 'signedIn' ? 'account' : 'local'
  const { events, loading, error } = useEvents(mode, range.from, range.to)

  const go = (next: DateTime, nextView: View = view) => {
    setAnchor(next)
    props.onNavigate(urlFor(nextView, next))
  }

  const openEvent = useCallback((event: CalendarEvent) => setDialog({ kind: 'edit', event }), [])
  const createEvent = useCallback((start: DateTime, end: DateTime, isAllDay: boolean) => setDialog({ kind: 'create', start, end, isAllDay }), [])
  const closeDialog = useCallback(() => setDialog({ kind: 'closed' }), [])
  const closeCalDav = useCallback(() => setCalDav(null), [])

  function newEvent () {
    const now = DateTime.now().setZone(userZone)
    const base = anchor.toISODate() === now.toISODate() ? now.plus({ hours: 1 }).startOf('hour') : anchor.set({ hour: 9 })
    createEvent(base, base.plus({ hours: 1 }), false)
  }

  async function refresh () {
    setRefreshing(true)
    try {
      await refreshCoordinator.run({ silent: false })
    } finally {
      setRefreshing(false)
    }
  }

  const title = view === 'day'
    ? anchor.toLocaleString(DateTime.DATE_HUGE)
    : `${days[0]?.toLocaleString({ day: 'numeric', month: 'short' })} – ${days[6]?.toLocaleString(DateTime.DATE_MED)}`
  const unit = view === 'day' ? 'day' : 'week'

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
          <a href={urlFor('week', anchor)} aria-current={view === 'week' ? 'page' : undefined} onClick={(e) => { e.preventDefault(); props.onNavigate(urlFor('week', anchor)) }}>Week</a>
        </nav>
        <div class='toolbar-end'>
          <ConnectionStatus />
          <button type='button' onClick={refresh} disabled={refreshing} aria-label='Refresh events'>{refreshing ? 'Refreshing…' : 'Refresh'}</button>
          {state.status === 'signedIn'
            ? (
              <div class='account'>
                <span class='account-email'>{state.email ?? 'Signed in'}</span>
                {providerEnabled && !googleConnected && <button type='button' onClick={() => { startConnect().catch(() => {}) }}>Connect Google Calendar</button>}
                <button type='button' onClick={() => setCalDav({ connectionId: null })}>Connect CalDAV calendar</button>
                <button type='button' onClick={() => { signOut().catch(() => {}) }}>Sign out</button>
              </div>
              )
            : state.status === 'signedOut'
              ? (
                <div class='account'>
                  <button type='button' onClick={() => setAuth('login')}>Sign in</button>
                  <button type='button' onClick={() => setAuth('signup')}>Create account</button>
                </div>
                )
              : null}
          <button type='button' class='primary' onClick={newEvent}>New event</button>
        </div>
      </header>
      <ReconnectBanner onPassword={(connectionId) => setCalDav({ connectionId })} />
      <BillingBanner signedIn={state.status === 'signedIn'} />
      <Notices />
      <main id='calendar' tabIndex={-1}>
        {error !== null && <p role='alert' class='form-error'>Events could not be loaded: {error.message}</p>}
        <TimeGrid view={view} days={days} events={events} loading={loading} onOpen={openEvent} onCreate={createEvent} />
      </main>
      <EventDialog state={dialog} onClose={closeDialog} />
      <CalDavDialog state={caldav} onClose={closeCalDav} />
      <AuthDialog kind={auth} resetToken={props.resetToken} onSwitch={setAuth} onSignedIn={() => setAuth(null)} />
    </div>
  )
}
