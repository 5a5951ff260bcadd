// What the user is told about where their events live and how sync is going: local only, up to
// date, syncing (with import progress), or needing attention, with the reconnect banner for a
// revoked connection.
import { useState } from 'preact/hooks'
import { useStore } from '../data/store.js'
import { session } from '../data/session.js'
import { startReconnect, streamStatus, syncView } from '../data/sync.js'
import { notify } from '../data/calendar.js'
import { primaryConnection, type ConnectionView } from '../lib/stream-reactions.js'

function progressText (connection: ConnectionView): string {
  const progress = connection.importProgress
  if (progress === undefined) return 'Syncing Google Calendar…'
  const calendars = progress.calendarsTotal > 0 ? `${progress.calendarsDone} of ${progress.calendarsTotal} calendars, ` : ''
  return `Importing Google Calendar: ${calendars}${progress.eventsImported} events`
}

export function ConnectionStatus () {
  const state = useStore(session)
  const stream = useStore(streamStatus)
  const connection = primaryConnection(useStore(syncView))
  let tone: 'local' | 'healthy' | 'syncing' | 'attention'
  let text: string
  if (state.status !== 'signedIn') {
    tone = 'local'
    text = 'Not signed in: events stay in this browser'
  } else if (connection !== null && (connection.status === 'IMPORTING' || connection.status === 'SYNCING')) {
    tone = 'syncing'
    text = progressText(connection)
  } else if (connection !== null && (connection.status === 'ATTENTION' || connection.status === 'RECONNECT_REQUIRED')) {
    tone = 'attention'
    text = connection.revoked ? 'Google Calendar access was revoked' : 'Google Calendar needs attention'
  } else if (stream === 'open') {
    tone = 'healthy'
    text = connection === null ? 'Up to date' : 'Google Calendar up to date'
  } else {
    tone = 'syncing'
    text = 'Connecting for live updates…'
  }
  return (
    <p class={`status status-${tone}`} role='status'>
      <span class='status-dot' aria-hidden='true' />
      {text}
    </p>
  )
}

export function ReconnectBanner () {
  const connection = primaryConnection(useStore(syncView))
  const [busy, setBusy] = useState(false)
  if (connection === null || connection.status !== 'RECONNECT_REQUIRED') return null
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
