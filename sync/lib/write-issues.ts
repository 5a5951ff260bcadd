// What the person is told when a change made here did not reach its provider: one sentence per
// cause, naming the provider as the person knows it, and whether Sync goes on trying.
import type { Provider, WriteIssue } from '../../schemas/sync/index.js'
import { ProviderRejectedError } from './providers/port.js'

const NAMES: Record<Provider, string> = { google: 'Google Calendar', microsoft: 'Outlook', caldav: 'The CalDAV server' }

/** `cause`: the write's error, or `calendarGone` when the connection no longer holds the event's calendar. */
export function writeIssueOf (provider: Provider, cause: unknown, at: Date): WriteIssue {
  const name = NAMES[provider]
  const issue = (reason: WriteIssue['reason'], message: string, retrying = false): WriteIssue =>
    ({ provider, reason, message, retrying, at: at.toISOString() })
  if (cause === 'calendarGone') {
    return issue('calendarGone', `${name} no longer has this event's calendar in the connected account: the change is kept here only.`)
  }
  if (cause instanceof ProviderRejectedError) {
    if (cause.status === 403) return issue('readOnly', `${name} lets this account only read this calendar: the change is kept here only.`)
    return issue('refused', `${name} refused this change${cause.status === null ? '' : ` (HTTP ${cause.status})`}: it is kept here only.`)
  }
  return issue('failing', `${name} has not taken this change yet: Sync tries again.`, true)
}
