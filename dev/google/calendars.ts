// Calendars and their events, kept in memory, with the change numbering that sync tokens, page
// tokens and etags are made of. Every write goes through `commit`, which numbers it and tells the
// listener (push notifications) that the calendar changed.
import { DateTime } from 'luxon'
import { apiErrors } from './errors.js'
import { finishEvent, instanceId, parseInstanceId, remindersOf } from './events.js'
import type { EventWrite, StoredEvent, StoredTime } from './events.js'
import { isOccurrence } from './recurrence.js'
import { newEventId, newOpaqueId } from './secrets.js'
import { firstChangeAfter } from '../stand-in/changes.js'
import { decodeOpaque, encodeOpaque } from '../stand-in/opaque.js'

/**
 * The account's effective access role on a calendar (calendarList `accessRole`). `reader` and
 * `freeBusyReader` stand for calendars shared with the account read-only, as subscribed or
 * colleagues' calendars are: every event write to them is refused.
 */
export type AccessRole = 'owner' | 'writer' | 'reader' | 'freeBusyReader'

export const ACCESS_ROLES: readonly AccessRole[] = ['owner', 'writer', 'reader', 'freeBusyReader']

/** Whether the role lets the account write events: Google's `writer` and `owner`. */
export const canWrite = (role: AccessRole): boolean => role === 'owner' || role === 'writer'

/** Whether `role` is at least `minimum` (calendarList.list `minAccessRole`), in the order the roles grant more. */
export const atLeast = (role: AccessRole, minimum: AccessRole): boolean => ACCESS_ROLES.indexOf(role) <= ACCESS_ROLES.indexOf(minimum)

export interface Calendar {
  id: string
  ownerSub: string
  ownerEmail: string
  summary: string
  description?: string
  timeZone: string
  colorId: string
  backgroundColor: string
  foregroundColor: string
  hidden: boolean
  selected: boolean
  primary: boolean
  accessRole: AccessRole
  /** The account's default reminders of the calendar (calendarList and events.list `defaultReminders`). */
  defaultReminders: DefaultReminder[]
  /** Stable per calendar, as Google's resourceId is per watched resource. */
  resourceId: string
  /** The account's calendar-list version at which this entry last changed (calendarList sync). */
  entryVersion: number
  /** Number of the last change; each write takes the next one. */
  seq: number
  /** Sync tokens carry the epoch they were issued in; a new epoch makes all of them answer 410. */
  epoch: string
  updated: number
  events: Map<string, StoredEvent>
  /** Event ids in creation order: full lists page over it, so a page token stays valid as events change. */
  order: string[]
  /** One entry per write, in change order: incremental lists page over it. */
  changes: Array<{ seq: number, id: string }>
}

/** One of a calendar's default reminders: Google's EventReminder. */
export interface DefaultReminder {
  method: 'email' | 'popup'
  minutes: number
}

export interface CalendarInput {
  id?: string
  summary?: string
  description?: string
  timeZone?: string
  hidden?: boolean
  selected?: boolean
  colorId?: string
  backgroundColor?: string
  foregroundColor?: string
  /** Default `owner`; the primary calendar is always the account's own. */
  accessRole?: AccessRole
  /** Default none. */
  defaultReminders?: DefaultReminder[]
}

export interface ListQuery {
  maxResults: number
  pageToken?: string
  syncToken?: string
  showDeleted: boolean
  timeMin?: number
  timeMax?: number
  updatedMin?: number
  iCalUID?: string
  q?: string
  orderBy?: 'updated'
}

export interface ListPage {
  items: StoredEvent[]
  /** True for incremental lists, whose cancelled items carry only what Google guarantees. */
  incremental: boolean
  nextPageToken?: string
  nextSyncToken?: string
}

interface SyncTokenPayload { c: string, s: number, e: string }
interface PageTokenPayload { c: string, m: 'full' | 'sync', p: number, s: number, e: string }

// Google's calendar colours 1..24; the stand-in hands them out in turn.
const COLORS = ['#ac725e', '#d06b64', '#f83a22', '#fa573c', '#ff7537', '#ffad46', '#42d692', '#16a765', '#7bd148', '#b3dc6c',
  '#fbe983', '#fad165', '#92e1c0', '#9fe1e7', '#9fc6e7', '#4986e7', '#9a9cff', '#b99aff', '#c2c2c2', '#cabdbf', '#cca6ac',
  '#f691b2', '#cd74e6', '#a47ae2']

function decode<T> (token: string, check: (value: Record<string, unknown>) => boolean): T | undefined {
  const value = decodeOpaque(token)
  return value !== undefined && check(value) ? value as T : undefined
}

const isSyncToken = (v: Record<string, unknown>): boolean => typeof v['c'] === 'string' && Number.isInteger(v['s']) && typeof v['e'] === 'string'
const isPageToken = (v: Record<string, unknown>): boolean =>
  typeof v['c'] === 'string' && (v['m'] === 'full' || v['m'] === 'sync') && Number.isInteger(v['p']) && Number.isInteger(v['s']) && typeof v['e'] === 'string'

/**
 * A page of a list: a page token when more follows, else the sync token of the snapshot the
 * listing read (Google: `nextPageToken` on every page but the last, `nextSyncToken` on the last).
 */
function finishPage (calendar: Calendar, items: StoredEvent[], mode: 'full' | 'sync', next: number | undefined, snapshot: number): ListPage {
  const result: ListPage = { items, incremental: mode === 'sync' }
  if (next !== undefined) {
    result.nextPageToken = encodeOpaque({ c: calendar.id, m: mode, p: next, s: snapshot, e: calendar.epoch } satisfies PageTokenPayload)
  } else {
    result.nextSyncToken = encodeOpaque({ c: calendar.id, s: snapshot, e: calendar.epoch } satisfies SyncTokenPayload)
  }
  return result
}

export class Calendars {
  private readonly calendars = new Map<string, Calendar>()
  private readonly bySub = new Map<string, string[]>()
  /** Per account: the calendar list's version, and the entries removed from it (for calendarList sync). */
  private readonly listVersions = new Map<string, number>()
  private readonly removedEntries = new Map<string, Array<{ id: string, version: number }>>()
  private nextColor = 0

  constructor (
    private readonly now: () => number,
    private readonly onChange: (calendar: Calendar, state: 'exists' | 'not_exists') => void
  ) {}

  create (owner: { sub: string, email: string, timeZone: string }, input: CalendarInput, primary: boolean): Calendar {
    const id = primary ? owner.email : (input.id ?? `${newEventId()}@group.calendar.google.com`)
    if (this.calendars.has(id)) throw new Error(`a calendar ${id} exists already`)
    const colorIndex = this.nextColor++ % COLORS.length
    const calendar: Calendar = {
      id,
      ownerSub: owner.sub,
      ownerEmail: owner.email,
      summary: input.summary ?? (primary ? owner.email : 'Calendar'),
      timeZone: input.timeZone ?? owner.timeZone,
      colorId: input.colorId ?? String(colorIndex + 1),
      backgroundColor: input.backgroundColor ?? COLORS[colorIndex] ?? '#9fc6e7',
      foregroundColor: input.foregroundColor ?? '#000000',
      hidden: input.hidden ?? false,
      selected: input.selected ?? !(input.hidden ?? false),
      primary,
      accessRole: primary ? 'owner' : (input.accessRole ?? 'owner'),
      defaultReminders: (input.defaultReminders ?? []).map(({ method, minutes }) => ({ method, minutes })),
      resourceId: newOpaqueId(18),
      entryVersion: this.bumpListVersion(owner.sub),
      seq: 0,
      epoch: newOpaqueId(6),
      updated: this.now(),
      events: new Map(),
      order: [],
      changes: [],
      ...(input.description === undefined ? {} : { description: input.description })
    }
    this.calendars.set(id, calendar)
    this.bySub.set(owner.sub, [...(this.bySub.get(owner.sub) ?? []), id])
    return calendar
  }

  get (id: string): Calendar | undefined {
    return this.calendars.get(id)
  }

  /** The calendar `calendarId` names for the account (`primary` is its own), if the account owns it. */
  resolve (sub: string, calendarId: string): Calendar | undefined {
    const ids = this.bySub.get(sub) ?? []
    if (calendarId === 'primary') return this.calendars.get(ids[0] ?? '')
    return ids.includes(calendarId) ? this.calendars.get(calendarId) : undefined
  }

  of (sub: string): Calendar[] {
    return (this.bySub.get(sub) ?? []).map((id) => this.calendars.get(id)).filter((c): c is Calendar => c !== undefined)
  }

  /** Removes a secondary calendar; its watchers get `not_exists`. */
  remove (calendar: Calendar): void {
    if (calendar.primary) throw new Error('a primary calendar cannot be deleted')
    this.calendars.delete(calendar.id)
    this.bySub.set(calendar.ownerSub, (this.bySub.get(calendar.ownerSub) ?? []).filter((id) => id !== calendar.id))
    const removed = this.removedEntries.get(calendar.ownerSub) ?? []
    removed.push({ id: calendar.id, version: this.bumpListVersion(calendar.ownerSub) })
    this.removedEntries.set(calendar.ownerSub, removed)
    this.onChange(calendar, 'not_exists')
  }

  /** The account changed the calendar's default reminders (its calendar list entry). */
  setDefaultReminders (calendar: Calendar, reminders: DefaultReminder[]): void {
    calendar.defaultReminders = reminders.map(({ method, minutes }) => ({ method, minutes }))
    calendar.entryVersion = this.bumpListVersion(calendar.ownerSub)
  }

  listVersion (sub: string): number {
    return this.listVersions.get(sub) ?? 0
  }

  /** The account's calendar-list entries changed after `version` (hidden ones too), and the ids removed. */
  listChangesSince (sub: string, version: number): { changed: Calendar[], removed: Array<{ id: string, version: number }> } {
    return {
      changed: this.of(sub).filter((calendar) => calendar.entryVersion > version),
      removed: this.removed(sub).filter((entry) => entry.version > version)
    }
  }

  /** Entries removed from the account's calendar list, with the list version of their removal. */
  removed (sub: string): Array<{ id: string, version: number }> {
    return [...(this.removedEntries.get(sub) ?? [])]
  }

  private bumpListVersion (sub: string): number {
    const version = (this.listVersions.get(sub) ?? 0) + 1
    this.listVersions.set(sub, version)
    return version
  }

  /** Every sync token issued for the calendar so far answers 410 from now on. */
  expireSyncTokens (calendar: Calendar): void {
    calendar.epoch = newOpaqueId(6)
  }

  /** The stored event, or for an occurrence of a series not yet written, the instance Google would show. */
  find (calendar: Calendar, id: string): StoredEvent | undefined {
    return calendar.events.get(id) ?? this.virtualInstance(calendar, id)
  }

  insert (calendar: Calendar, write: EventWrite, organizerEmail: string, notify = true): StoredEvent {
    const event = this.prepareInsert(calendar, write, organizerEmail)
    this.commit(calendar, event, true)
    if (notify) this.onChange(calendar, 'exists')
    return event
  }

  /** Many inserts as one change for watchers: one notification, however many events. */
  insertMany (calendar: Calendar, writes: EventWrite[], organizerEmail: string): StoredEvent[] {
    const prepared: StoredEvent[] = []
    const ids = new Set<string>()
    for (const write of writes) {
      const event = this.prepareInsert(calendar, write, organizerEmail, prepared)
      if (ids.has(event.id)) throw apiErrors.duplicate()
      ids.add(event.id)
      prepared.push(event)
    }
    for (const event of prepared) this.commit(calendar, event, true)
    if (prepared.length > 0) this.onChange(calendar, 'exists')
    return prepared
  }

  /** events.update (`replace`) or events.patch (merge); an unwritten instance becomes an exception. */
  modify (calendar: Calendar, current: StoredEvent, write: EventWrite, mode: 'patch' | 'update', notify = true): StoredEvent {
    if (write.id !== undefined && write.id !== current.id) throw apiErrors.invalid('Invalid resource id value.')
    const next: StoredEvent = mode === 'patch'
      ? { ...current, extra: { ...current.extra } }
      : {
          ...current,
          extra: {},
          summary: undefined,
          description: undefined,
          location: undefined,
          recurrence: undefined,
          start: undefined,
          end: undefined,
          status: 'confirmed'
        }
    if (write.status !== undefined) next.status = write.status
    for (const name of ['summary', 'description', 'location'] as const) {
      const value = write[name]
      if (value === null) next[name] = undefined
      else if (value !== undefined) next[name] = value
    }
    if (write.start !== undefined) next.start = write.start
    if (write.end !== undefined) next.end = write.end
    if (write.recurrence !== undefined) next.recurrence = write.recurrence === null ? undefined : write.recurrence
    if (next.recurringEventId !== undefined) next.recurrence = undefined
    for (const [name, value] of Object.entries(write.extra)) {
      if (value === null) delete next.extra[name]
      else if (name === 'reminders') next.extra[name] = remindersOf(current.extra[name], value as Record<string, unknown>, mode === 'patch')
      else next.extra[name] = value
    }
    if (write.sequence !== undefined) {
      if (write.sequence < current.sequence) {
        throw apiErrors.invalid('Invalid sequence value. The specified sequence number is below the current sequence number of the resource.')
      }
      next.sequence = write.sequence
    } else if (isSignificantChange(current, next)) {
      next.sequence = current.sequence + 1
    }
    finishEvent(next)
    this.commit(calendar, next, !calendar.events.has(current.id))
    if (notify) this.onChange(calendar, 'exists')
    return next
  }

  /** events.delete: the event stays, cancelled, so incremental lists can report it. */
  cancel (calendar: Calendar, current: StoredEvent, notify = true): StoredEvent {
    if (current.status === 'cancelled' && calendar.events.has(current.id)) throw apiErrors.deleted()
    const next: StoredEvent = { ...current, status: 'cancelled', sequence: current.sequence + 1 }
    this.commit(calendar, next, !calendar.events.has(current.id))
    if (current.recurrence !== undefined) {
      // Deleting a series deletes its exceptions with it.
      for (const other of calendar.events.values()) {
        if (other.recurringEventId === current.id && other.status !== 'cancelled') {
          this.commit(calendar, { ...other, status: 'cancelled', sequence: other.sequence + 1 }, false)
        }
      }
    }
    if (notify) this.onChange(calendar, 'exists')
    return next
  }

  list (calendar: Calendar, query: ListQuery): ListPage {
    let page: PageTokenPayload | undefined
    if (query.pageToken !== undefined) {
      page = decode<PageTokenPayload>(query.pageToken, isPageToken)
      // A page token belongs to one calendar and one kind of list (full or incremental).
      if (page === undefined || page.c !== calendar.id || (page.m === 'sync') !== (query.syncToken !== undefined)) {
        throw apiErrors.invalid('Invalid page token value.', 'pageToken')
      }
      if (page.m === 'sync' && page.e !== calendar.epoch) throw apiErrors.fullSyncRequired()
    }
    if (query.syncToken !== undefined) {
      const token = decode<SyncTokenPayload>(query.syncToken, isSyncToken)
      if (token === undefined || token.c !== calendar.id || token.e !== calendar.epoch || token.s > calendar.seq) {
        throw apiErrors.fullSyncRequired()
      }
      return this.listChanges(calendar, query, token.s, page)
    }
    return this.listAll(calendar, query, page)
  }

  private listAll (calendar: Calendar, query: ListQuery, page: PageTokenPayload | undefined): ListPage {
    const snapshot = page?.s ?? calendar.seq
    const matches = (event: StoredEvent): boolean => matchesQuery(event, query)
    let source: string[] = calendar.order
    if (query.orderBy === 'updated') {
      source = calendar.order
        .filter((id) => { const event = calendar.events.get(id); return event !== undefined && matches(event) })
        .sort((a, b) => (calendar.events.get(a)?.updated ?? 0) - (calendar.events.get(b)?.updated ?? 0))
    }
    const items: StoredEvent[] = []
    let position = page?.p ?? 0
    let next: number | undefined
    for (; position < source.length; position++) {
      const event = calendar.events.get(source[position] ?? '')
      if (event === undefined || !matches(event)) continue
      if (items.length === query.maxResults) { next = position; break }
      items.push(event)
    }
    return finishPage(calendar, items, 'full', next, snapshot)
  }

  private listChanges (calendar: Calendar, query: ListQuery, since: number, page: PageTokenPayload | undefined): ListPage {
    const snapshot = page?.s ?? calendar.seq
    const items: StoredEvent[] = []
    let position = page?.p ?? firstChangeAfter(calendar.changes, since)
    let next: number | undefined
    for (; position < calendar.changes.length; position++) {
      const change = calendar.changes[position]
      if (change === undefined || change.seq > snapshot) break
      const event = calendar.events.get(change.id)
      // An event written twice since the token appears once, at its latest write.
      if (event === undefined || event.changedSeq !== change.seq) continue
      if (items.length === query.maxResults) { next = position; break }
      items.push(event)
    }
    return finishPage(calendar, items, 'sync', next, snapshot)
  }

  private prepareInsert (calendar: Calendar, write: EventWrite, organizerEmail: string, pending: StoredEvent[] = []): StoredEvent {
    const now = this.now()
    let master: StoredEvent | undefined
    if (write.recurringEventId !== undefined) {
      master = calendar.events.get(write.recurringEventId) ?? pending.find((event) => event.id === write.recurringEventId)
      if (master?.recurrence === undefined) throw apiErrors.invalid('Invalid value for: recurringEventId')
      if (write.originalStartTime === undefined) throw apiErrors.required('Missing original start time.')
    }
    const id = write.id ?? (master !== undefined && write.originalStartTime !== undefined
      ? instanceId(master.id, write.originalStartTime)
      : newEventId())
    if (calendar.events.has(id)) throw apiErrors.duplicate()
    const event: StoredEvent = {
      id,
      status: write.status ?? 'confirmed',
      iCalUID: write.iCalUID ?? master?.iCalUID ?? `${id}@google.com`,
      sequence: write.sequence ?? master?.sequence ?? 0,
      created: now,
      updated: now,
      organizerEmail: master?.organizerEmail ?? organizerEmail,
      extra: insertedExtra(write.extra),
      changedSeq: 0,
      coverStartMs: 0,
      coverEndMs: 0
    }
    if (write.summary != null) event.summary = write.summary
    if (write.description != null) event.description = write.description
    if (write.location != null) event.location = write.location
    if (write.start !== undefined) event.start = write.start
    if (write.end !== undefined) event.end = write.end
    if (master !== undefined) {
      event.recurringEventId = master.id
      event.originalStartTime = write.originalStartTime
    } else if (write.recurrence != null && write.recurrence.length > 0) {
      event.recurrence = write.recurrence
    }
    return finishEvent(event)
  }

  /** `isNew`: first stored (an insert, or an occurrence written for the first time). */
  private commit (calendar: Calendar, event: StoredEvent, isNew: boolean): void {
    const seq = ++calendar.seq
    event.changedSeq = seq
    event.updated = this.now()
    if (isNew) event.created = event.updated
    calendar.updated = event.updated
    calendar.changes.push({ seq, id: event.id })
    if (isNew) calendar.order.push(event.id)
    calendar.events.set(event.id, event)
  }

  private virtualInstance (calendar: Calendar, id: string): StoredEvent | undefined {
    const parsed = parseInstanceId(id)
    if (parsed === undefined) return undefined
    const master = calendar.events.get(parsed.seriesId)
    if (master?.recurrence === undefined || master.status === 'cancelled' || master.start === undefined || master.end === undefined) return undefined
    const allDay = master.start.date !== undefined
    const zone = master.start.timeZone ?? calendar.timeZone
    let originalStart: StoredTime
    if (allDay) {
      if (parsed.date === undefined) return undefined
      originalStart = { date: parsed.date, ms: DateTime.fromISO(parsed.date, { zone }).toMillis() }
    } else {
      if (parsed.ms === undefined) return undefined
      const dateTime = DateTime.fromMillis(parsed.ms, { zone }).toISO({ suppressMilliseconds: true }) ?? ''
      originalStart = { dateTime, timeZone: zone, ms: parsed.ms }
    }
    if (!isOccurrence(master.recurrence, { ms: master.start.ms, allDay, zone }, originalStart.ms)) return undefined
    const length = master.end.ms - master.start.ms
    const end: StoredTime = allDay
      ? { date: DateTime.fromMillis(originalStart.ms + length, { zone }).toISODate() ?? '', ms: originalStart.ms + length }
      : { dateTime: DateTime.fromMillis(originalStart.ms + length, { zone }).toISO({ suppressMilliseconds: true }) ?? '', timeZone: master.end.timeZone ?? zone, ms: originalStart.ms + length }
    const instance: StoredEvent = {
      ...master,
      id,
      extra: { ...master.extra },
      recurrence: undefined,
      recurringEventId: master.id,
      originalStartTime: originalStart,
      start: { ...originalStart },
      end
    }
    return finishEvent(instance)
  }
}

function matchesQuery (event: StoredEvent, query: ListQuery): boolean {
  const cancelled = event.status === 'cancelled'
  const changedSinceUpdatedMin = query.updatedMin !== undefined && event.updated >= query.updatedMin
  // Cancelled instances of a series stay listed when showDeleted and singleEvents are both false;
  // deletions since updatedMin are listed whatever showDeleted says.
  if (cancelled && !query.showDeleted && event.recurringEventId === undefined && !changedSinceUpdatedMin) return false
  if (query.updatedMin !== undefined && !changedSinceUpdatedMin) return false
  if (query.timeMin !== undefined && event.coverEndMs <= query.timeMin) return false
  if (query.timeMax !== undefined && event.coverStartMs >= query.timeMax) return false
  if (query.iCalUID !== undefined && event.iCalUID !== query.iCalUID) return false
  if (query.q !== undefined) {
    const needle = query.q.toLowerCase()
    const haystack = `${event.summary ?? ''}\n${event.description ?? ''}\n${event.location ?? ''}`.toLowerCase()
    if (!haystack.includes(needle)) return false
  }
  return true
}

function isSignificantChange (before: StoredEvent, after: StoredEvent): boolean {
  const time = (t: StoredTime | undefined): string => t === undefined ? '' : `${t.ms}|${t.date ?? ''}|${t.timeZone ?? ''}`
  return time(before.start) !== time(after.start) ||
    time(before.end) !== time(after.end) ||
    JSON.stringify(before.recurrence ?? []) !== JSON.stringify(after.recurrence ?? []) ||
    before.status !== after.status
}

/** A new event's pass-through fields, its reminders checked and written as Google answers them. */
function insertedExtra (written: Record<string, unknown>): Record<string, unknown> {
  // A field cleared (null) on insert is a field the new event does not have.
  const { reminders, ...extra } = Object.fromEntries(Object.entries(written).filter(([, value]) => value !== null))
  return reminders === undefined || reminders === null ? extra : { ...extra, reminders: remindersOf(undefined, reminders as Record<string, unknown>, false) }
}
