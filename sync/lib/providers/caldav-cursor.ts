// The cursor of a CalDAV calendar, as stored between pulls: the server's sync token (RFC 6578) or,
// without it, its ctag and each resource's etag; with the overrides each series had when last read.
import type { ProviderEvent } from '../../../schemas/sync/index.js'
import { ProviderCursorExpiredError } from './port.js'

/**
 * The overrides (RECURRENCE-ID) each series' resource had when last read, by href: each original
 * start with the override's version. A pull that reads the resource without one of them tells the
 * backend it is gone, dated after that version (another client's clock may run ahead of ours).
 */
export type KnownOverrides = Record<string, Record<string, string>>

/**
 * The cursor of a calendar: the server's sync token, or (without RFC 6578) its ctag and etags; with
 * the overrides known, since neither a sync token nor an etag says which override went.
 */
export type Cursor = ({ kind: 'token', token: string } | { kind: 'etags', ctag: string | null, etags: Record<string, string> }) & { overrides: KnownOverrides }

export function encodeCursor (cursor: Cursor): string {
  const overrides = Object.keys(cursor.overrides).length === 0 ? {} : { o: cursor.overrides }
  if (cursor.kind === 'token') return Object.keys(overrides).length === 0 ? `token:${cursor.token}` : `tokens:${JSON.stringify({ t: cursor.token, ...overrides })}`
  return `etags:${JSON.stringify({ c: cursor.ctag, e: cursor.etags, ...overrides })}`
}

function overridesOf (value: unknown): KnownOverrides {
  const overrides: KnownOverrides = {}
  if (typeof value !== 'object' || value === null) return overrides
  for (const [href, starts] of Object.entries(value)) {
    if (typeof starts !== 'object' || starts === null) continue
    overrides[href] = Object.fromEntries(Object.entries(starts).filter((entry): entry is [string, string] => typeof entry[1] === 'string'))
  }
  return overrides
}

export function decodeCursor (value: string): Cursor {
  if (value.startsWith('token:')) return { kind: 'token', token: value.slice('token:'.length), overrides: {} }
  try {
    if (value.startsWith('tokens:')) {
      const parsed = JSON.parse(value.slice('tokens:'.length)) as { t?: unknown, o?: unknown }
      if (typeof parsed.t === 'string') return { kind: 'token', token: parsed.t, overrides: overridesOf(parsed.o) }
    }
    if (value.startsWith('etags:')) {
      const parsed = JSON.parse(value.slice('etags:'.length)) as { c?: unknown, e?: unknown, o?: unknown }
      const etags: Record<string, string> = {}
      if (typeof parsed.e === 'object' && parsed.e !== null) {
        for (const [href, etag] of Object.entries(parsed.e)) if (typeof etag === 'string') etags[href] = etag
      }
      return { kind: 'etags', ctag: typeof parsed.c === 'string' ? parsed.c : null, etags, overrides: overridesOf(parsed.o) }
    }
  } catch {}
  throw new ProviderCursorExpiredError('the stored CalDAV cursor cannot be read')
}

/** The overrides among one resource's events: their original starts and versions. */
export function overrideStarts (events: ProviderEvent[]): Record<string, string> {
  return Object.fromEntries(events.flatMap((event) => event.recurringEventId === undefined || event.originalStartDate === undefined ? [] : [[event.originalStartDate, event.updated]]))
}
