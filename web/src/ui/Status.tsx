// What the user is told about where their events live and how sync is going: changes not saved or
// waiting for the connection, events shown as last seen (no answer from the server), local only,
// changes a provider does not have, up to date, syncing (with import progress), or needing attention, with the reconnect banner for a
// revoked connection: Google's grant is given again at Google, a CalDAV account's password here.
import { useEffect, useState } from 'preact/hooks'
import { DateTime } from 'luxon'
import { useStore } from '../data/store.js'
import { session } from '../data/session.js'
import { startReconnect, streamStatus, syncView } from '../data/sync.js'
import { notify, userZone } from '../data/calendar.js'
import { online, pendingWrites } from '../data/pending.js'
import { summaryOf } from '../lib/pending-writes.js'
import { liveConnections, primaryConnection, unsyncedWritesOf, type ConnectionView } from '../lib/stream-reactions.js'
import { providerName } from '../lib/caldav.js'

function progressText (connection: ConnectionView): string {
  const progress = connection.importProgress
  const name = providerName(connection.provider)
  if (progress === undefined) return `Syncing ${name}…`
  const calendars = progress.calendarsTotal > 0 ? `${progress.calendarsDone} of ${progress.calendarsTotal} calendars, ` : ''
  return `Importing ${name}: ${calendars}${progress.eventsImported} events`
}

/** "5 s", "2 min": what is left of a wait, as the status line counts it down. */
function waitLeft (retryAt: number, now: number): string {
  const seconds = Math.max(0, Math.ceil((retryAt - now) / 1000))
  return seconds < 60 ? `${seconds} s` : `${Math.ceil(seconds / 60)} min`
}

/** The time now, every second while `ticking`. */
function useSecondTicks (ticking: boolean): number {
  const [now, setNow] = useState(Date.now)
  useEffect(() => {
    if (!ticking) return
    setNow(Date.now())
    const timer = setInterval(() => setNow(Date.now()), 1000)
    return () => clearInterval(timer)
  }, [ticking])
  return now
}

/** "Offline: showing events as last seen at 14:03" (or "on 2 Mar at 14:03" for another day). */
function lastSeenText (readAt: number, now: number): string {
  const seen = DateTime.fromMillis(readAt).setZone(userZone)
  const day = seen.toISODate() === DateTime.fromMillis(now).setZone(userZone).toISODate() ? '' : `on ${seen.toFormat('d LLL')} `
  return `Offline: showing events as last seen ${day}at ${seen.toFormat('HH:mm')}`
}

type Tone = 'local' | 'healthy' | 'syncing' | 'attention' | 'unsaved' | 'offline'

interface StatusLine {
  tone: Tone
  text: string
  /** When a delayed change is tried again: the line counts down to it. */
  retryAt: number | null
  /** What is said of the shown events after what is said of unsent changes. */
  lastSeen: string | null
  /** A few words for what needs the user's attention (offline, a change not saved or not synced, a
   * connection to repair), said where the line itself is folded away; null when nothing does. */
  brief: string | null
}

/** `lastKnownAt`: the shown events are the account's as last read then (no answer from the server). */
function useStatusLine (lastKnownAt: number | null): StatusLine {
  const state = useStore(session)
  const stream = useStore(streamStatus)
  const view = useStore(syncView)
  const connection = primaryConnection(view)
  const unsynced = unsyncedWritesOf(view)
  const isOnline = useStore(online)
  const data = useStore(pendingWrites)
  const writes = state.status === 'signedIn' ? summaryOf(data, state.userId) : null
  let tone: Tone
  let text: string
  let brief: string | null = null
  let retryAt: number | null = null
  // A change the server has not taken comes first: the line never says "up to date" over it.
  if (writes !== null && writes.failed > 0) {
    tone = 'unsaved'
    text = writes.failed === 1 ? '1 change not saved' : `${writes.failed} changes not saved`
    brief = text
  } else if (writes !== null && writes.delayed > 0 && writes.retryAt !== null) {
    tone = 'offline'
    const changes = writes.delayed === 1 ? '1 change' : `${writes.delayed} changes`
    text = `${changes} waiting: retrying in `
    brief = `${changes} waiting`
    retryAt = writes.retryAt
  } else if (writes !== null && writes.waiting > 0) {
    tone = 'offline'
    text = `${writes.waiting === 1 ? '1 change' : `${writes.waiting} changes`} waiting for the connection`
    brief = text
  } else if (writes !== null && writes.queued > 0) {
    tone = 'syncing'
    text = 'Saving…'
  } else if (state.status === 'signedIn' && !isOnline) {
    tone = 'offline'
    text = 'Offline: changes are kept until the connection returns'
    brief = 'offline'
  } else if (state.status !== 'signedIn') {
    tone = 'local'
    text = 'Not signed in: events stay in this browser'
  } else if (connection !== null && (connection.status === 'IMPORTING' || connection.status === 'SYNCING')) {
    tone = 'syncing'
    text = progressText(connection)
  } else if (connection !== null && (connection.status === 'ATTENTION' || connection.status === 'RECONNECT_REQUIRED')) {
    tone = 'attention'
    const name = providerName(connection.provider)
    text = !connection.revoked ? `${name} needs attention` : connection.provider === 'caldav' ? `${name}: the server refused its password` : `${name} access was revoked`
    brief = text
  } else if (unsynced !== null) {
    // Saved here but refused (or failing) at a provider: never "up to date" over it.
    tone = 'attention'
    const where = unsynced.providers.length === 1 ? providerName(unsynced.providers[0] as string) : 'their calendars'
    text = `${unsynced.count === 1 ? '1 change' : `${unsynced.count} changes`} not synced to ${where}`
    brief = text
  } else if (stream === 'open') {
    tone = 'healthy'
    // With several accounts connected, naming one would say nothing of the others (all are healthy here).
    text = connection === null ? 'Up to date' : liveConnections(view).length > 1 ? 'All calendars up to date' : `${providerName(connection.provider)} up to date`
  } else {
    tone = 'syncing'
    text = 'Connecting for live updates…'
  }
  // Events shown from the kept copy: said after what is said of unsent changes, instead of the rest.
  let lastSeen: string | null = null
  if (state.status === 'signedIn' && lastKnownAt !== null) {
    const unsent = writes !== null && writes.failed + writes.delayed + writes.waiting + writes.queued > 0
    if (unsent) {
      lastSeen = ` · ${lastSeenText(lastKnownAt, Date.now())}`
      brief ??= 'offline'
    } else {
      tone = 'offline'
      text = lastSeenText(lastKnownAt, Date.now())
      brief = 'offline'
    }
  }
  return { tone, text, retryAt, lastSeen, brief }
}

/** `lastKnownAt`: the shown events are the account's as last read then (no answer from the server). */
export function ConnectionStatus (props: { lastKnownAt: number | null }) {
  const { tone, text, retryAt, lastSeen } = useStatusLine(props.lastKnownAt)
  const now = useSecondTicks(retryAt !== null)
  return (
    <p class={`status status-${tone}`} role='status'>
      <span class='status-dot' aria-hidden='true' />
      {text}
      {/* A countdown: shown, but not announced every second (the rest of the line is). */}
      {retryAt !== null && <span aria-live='off'>{waitLeft(retryAt, now)}</span>}
      {lastSeen}
    </p>
  )
}

/** A few words for what in the status line needs the user's attention, or null when nothing does. */
export function useStatusAttention (lastKnownAt: number | null): string | null {
  return useStatusLine(lastKnownAt).brief
}

/** `onPassword`: a revoked CalDAV connection is repaired by entering its password again here. */
export function ReconnectBanner (props: { onPassword: (connectionId: string) => void }) {
  const connection = primaryConnection(useStore(syncView))
  const [busy, setBusy] = useState(false)
  if (connection === null || connection.status !== 'RECONNECT_REQUIRED') return null
  if (connection.provider === 'caldav') {
    const { connectionId } = connection
    return (
      <div class='banner' role='region' aria-label='Calendar connection'>
        <p>Your CalDAV calendar stopped syncing because its server no longer accepts the password (an app password may have been revoked). Enter the password again to keep it in sync.</p>
        <button type='button' class='primary' onClick={() => props.onPassword(connectionId)}>Enter password again</button>
      </div>
    )
  }
  async function reconnect () {
    if (connection === null) return
    setBusy(true)
    try {
      await startReconnect(connection.connectionId)
    } catch (error) {
      setBusy(false)
      notify(`Reconnect could not start: ${error instanceof Error ? error.message : String(error)}`, 'error')
    }
  }
  return (
    <div class='banner' role='region' aria-label='Calendar connection'>
      <p>Google Calendar stopped syncing because access was revoked. Reconnect to keep your calendars in sync.</p>
      <button type='button' class='primary' disabled={busy} onClick={reconnect}>Reconnect Google Calendar</button>
    </div>
  )
}
