// The pure rules of connecting a CalDAV account (for example iCloud with an app password): what
// the server address field accepts, the sentence for each refusal of POST /api/connections/caldav,
// the account remembered per connection so a re-entered password needs nothing else, and how a
// connection's provider is named in the status.
import { readJson, type KeyValueStore } from './storage.js'

export const CALDAV_EXAMPLE_URL = 'https://caldav.icloud.com'

/**
 * The address as the backend wants it (`^https?://`), or null when it cannot be one. People type
 * "caldav.icloud.com" as often as the full URL, so a missing scheme means https.
 */
export function normaliseServerUrl (input: string): string | null {
  const trimmed = input.trim()
  if (trimmed === '') return null
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) && !/^https?:\/\//i.test(trimmed)) return null
  const withScheme = /^https?:\/\//i.test(trimmed) ? trimmed : `https://${trimmed}`
  try {
    if (new URL(withScheme).hostname === '') return null
  } catch {
    return null
  }
  // What was typed, not url.href: a path the server needs is kept exactly as given.
  return withScheme.length > 2048 ? null : withScheme
}

/** Which field a refusal is about, so that field is marked and gets the focus. */
type CalDavField = 'serverUrl' | 'credentials' | null

export interface CalDavFailure {
  message: string
  field: CalDavField
}

/** A refusal of the connect route (or a failed request: status 0) as a sentence for the person. */
export function calDavFailure (status: number, code: string | undefined): CalDavFailure {
  switch (code) {
    case 'CALDAV_CONNECT_FAILED':
      // The service does not say which of the three failed (it would tell strangers what listens where).
      return {
        field: 'credentials',
        message: `The server did not accept this address, user name and password. Check all three; for iCloud the address is ${CALDAV_EXAMPLE_URL}, the user name your Apple ID email, and the password an app-specific password, not your Apple ID password.`
      }
    case 'CREDENTIAL_ENCRYPTION_KEY_MISSING':
      return { field: null, message: 'This calendar service is not set up to store calendar passwords yet, so a CalDAV account cannot be connected. Please tell its administrator.' }
    case 'PROVIDER_NOT_CONFIGURED':
      return { field: null, message: 'This calendar service does not offer CalDAV accounts yet. Please tell its administrator.' }
    case 'MAINTENANCE':
      return { field: null, message: 'Connecting calendars is paused for maintenance. Please try again later.' }
    case 'CONNECTION_NOT_FOUND':
      return { field: null, message: 'This calendar connection no longer exists. Close this dialog and connect the account again.' }
  }
  if (status === 0) return { field: null, message: 'The calendar service could not be reached. Check your connection and try again.' }
  if (status === 400) return { field: 'serverUrl', message: `Check the server address: it starts with https://, for example ${CALDAV_EXAMPLE_URL}.` }
  if (status === 503 || status === 409) return { field: null, message: 'Calendar sync is briefly unavailable. Please try again in a moment.' }
  return { field: null, message: 'The account could not be connected. Please try again.' }
}

export const CALDAV_ACCOUNTS_KEY = 'caldavAccounts'

/** Never the password: only what lets "enter the password again" skip the other two fields. */
export interface CalDavAccount {
  serverUrl: string
  username: string
}

function accounts (store: KeyValueStore): Record<string, CalDavAccount> {
  const stored = readJson<unknown>(store, CALDAV_ACCOUNTS_KEY)
  return typeof stored === 'object' && stored !== null && !Array.isArray(stored) ? stored as Record<string, CalDavAccount> : {}
}

export function rememberAccount (store: KeyValueStore, connectionId: string, account: CalDavAccount): void {
  store.setItem(CALDAV_ACCOUNTS_KEY, JSON.stringify({ ...accounts(store), [connectionId]: { serverUrl: account.serverUrl, username: account.username } }))
}

export function recallAccount (store: KeyValueStore, connectionId: string): CalDavAccount | null {
  const account = accounts(store)[connectionId]
  return typeof account?.serverUrl === 'string' && typeof account.username === 'string' ? account : null
}

/** How the status and the banner name a connection's calendar. */
export function providerName (provider: string): string {
  if (provider === 'caldav') return 'CalDAV calendar'
  if (provider === 'microsoft') return 'Outlook calendar'
  return 'Google Calendar'
}
