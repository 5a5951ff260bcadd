// Start-up order matters: the route is made canonical first (keeping the query, so `verify`
// survives), then the `auth` entry point is read (reset token captured) and removed from the URL,
// then a connect redirect is reported, and only then does anything render or ask the backend.
import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import './ui/styles.css'
import { CalendarApp, Notices } from './ui/App.js'
import { initSession, restoreSession, session } from './data/session.js'
import { carryLocalEvents, notify, queryClient } from './data/calendar.js'
import { closeStream, openStream, wireFocusRefresh } from './data/sync.js'
import { wirePendingWrites } from './data/pending.js'
import { wireReminders } from './data/reminders.js'
import { forgetAccount } from './data/last-known.js'
import { clearUndo } from './data/undo.js'
import { finishCallback, handleConnectRedirect } from './data/provider.js'
import { readAuthEntry, routeOf, type Route } from './lib/auth-params.js'

initSession()

// First: a connect that came back through Sync returns to the page it began on.
const connectMessage = routeOf(location.href).route === 'callback' ? null : handleConnectRedirect()
const initialRoute = routeOf(location.href)
if (initialRoute.redirect !== null) history.replaceState(history.state, '', initialRoute.redirect)
const entry = readAuthEntry(location.href)
if (entry.dialog !== null) history.replaceState(history.state, '', entry.cleaned)

let lastStatus = session.get().status
let lastUser: string | null = null
session.subscribe((state) => {
  // What was done in the other calendar (signed out, or another account) is not undone here.
  if (state.status !== lastStatus) clearUndo()
  lastStatus = state.status
  // The events kept for an offline reload belong to the account: they go at its sign-out (or
  // the end of its session), and are never shown under another account.
  const user = state.status === 'signedIn' ? state.userId : null
  if (lastUser !== null && user !== lastUser) forgetAccount(state.status === 'signedOut' ? lastUser : null)
  if (state.status !== 'unknown') lastUser = user
  if (state.status === 'signedIn') {
    openStream()
    carryLocalEvents().catch(() => {})
  } else if (state.status === 'signedOut') {
    closeStream()
    // The next account to sign in on this tab must not see this one's events, even for a moment.
    queryClient.removeQueries({ queryKey: ['events', 'account'] })
  }
})
wireFocusRefresh()
wirePendingWrites()
wireReminders()

function Callback (props: { onDone: (path: string) => void }) {
  const [message, setMessage] = useState('Finishing sign-in…')
  useEffect(() => {
    finishCallback().then((outcome) => {
      if (!outcome.ok || outcome.message !== undefined) setMessage(outcome.message ?? '')
      if (outcome.message !== undefined) notify(outcome.message, outcome.ok ? 'info' : 'error')
      props.onDone(outcome.returnPath)
    }).catch(() => props.onDone('/day'))
  }, [])
  return (
    <main class='callback'>
      <h1>Calendar</h1>
      <p role='status'>{message}</p>
    </main>
  )
}

function Root () {
  const [route, setRoute] = useState<Route>(initialRoute.route)
  const navigate = (path: string, replace = false) => {
    if (replace) history.replaceState(history.state, '', path)
    else history.pushState(null, '', path)
    setRoute(routeOf(location.href).route)
  }
  useEffect(() => {
    const onPop = () => setRoute(routeOf(location.href).route)
    window.addEventListener('popstate', onPop)
    if (connectMessage !== null) notify(connectMessage)
    if (route !== 'callback') restoreSession().catch(() => session.set({ status: 'signedOut' }))
    return () => window.removeEventListener('popstate', onPop)
  }, [])
  if (route === 'callback') {
    return (
      <>
        <Callback onDone={(path) => {
          navigate(path, true)
          restoreSession().catch(() => session.set({ status: 'signedOut' }))
        }}
        />
        <Notices />
      </>
    )
  }
  return <CalendarApp view={route} authDialog={entry.dialog} resetToken={entry.resetToken} onNavigate={(path) => navigate(path)} />
}

render(<Root />, document.getElementById('app') as HTMLElement)

// An offline reload opens the calendar from the worker's copy (web/src/sw.ts). Without one
// (an old browser, a private window that refuses it) everything works online as before.
if ('serviceWorker' in navigator) navigator.serviceWorker.register('/sw.js').catch(() => {})
