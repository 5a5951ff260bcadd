// Calendars and their events in memory, with the change numbering that change keys and delta
// tokens are made of. Every write replaces the stored event object (never mutates it) and logs
// the state it replaced, so a delta round can tell which occurrences left a calendar view.
import { randomBytes } from 'node:crypto'
import { graphErrors } from './errors.js'
import { checkContent, mergeContent, newContent, occurrenceContent } from './events.js'
import type { Content, ContentPatch, EventWrite, Instance } from './events.js'
import { firstOccurrence, isOccurrence, occurrencesBetween } from './recurrence.js'
import type { Recurrence } from './recurrence.js'
import { changeKeyOf, instanceItemId, newICalUid, newItemId, parseItemId, randomText } from './secrets.js'
import { firstChangeAfter } from '../stand-in/changes.js'

/** A changed or deleted occurrence of a series. */
export interface ExceptionRecord {
  originalStartMs: number
  cancelled: boolean
  /** What differs from the occurrence the series would have. */
  patch: ContentPatch
  changeKey: string
  created: number
  lastModified: number
  lastModifiedBy: string
}

export interface StoredEvent {
  id: string
  calendarId: string
  type: 'singleInstance' | 'seriesMaster'
  content: Content
  recurrence?: Recurrence
  /** By original start. */
  exceptions: ReadonlyMap<number, ExceptionRecord>
  iCalUId: string
  transactionId?: string
  created: number
  lastModified: number
  changeKey: string
  /** Deleted events stay as tombstones, so delta rounds and page positions stay stable. */
  deleted: boolean
  /** `control` (another device) or the application (client id) that wrote it. */
  createdBy: string
  lastModifiedBy: string
}

export interface Calendar {
  id: string
  ownerOid: string
  ownerName: string
  ownerEmail: string
  name: string
  color: string
  hexColor: string
  isDefault: boolean
  canEdit: boolean
  changeKey: string
  changeKeyPrefix: Buffer
  /** Number of the last change. */
  seq: number
  /** Delta tokens carry the epoch they were issued in; a new epoch makes all of them answer 410. */
  epoch: string
  events: Map<string, StoredEvent>
  /** Event ids in creation order: first delta rounds page over it. */
  order: string[]
  /** One entry per write, in change order: later delta rounds page over it. */
  changes: Change[]
  transactions: Map<string, string>
}

export interface CalendarInput {
  name?: string
  color?: string
  hexColor?: string
  canEdit?: boolean
}

interface Change {
  seq: number
  eventId: string
  /** The event as it was before this change; undefined for a creation. */
  before: StoredEvent | undefined
  /** Set when the change touched one occurrence only (its original start). */
  instance?: number
}

export type Target =
  | { kind: 'item', event: StoredEvent }
  | { kind: 'instance', master: StoredEvent, originalStartMs: number, exception?: ExceptionRecord }
type InstanceTarget = Extract<Target, { kind: 'instance' }>

export type ChangeType = 'created' | 'updated' | 'deleted'
interface ChangeNotice { changeType: ChangeType, eventId: string, changeKey: string }
export type ChangeListener = (calendar: Calendar, notices: ChangeNotice[]) => void

/** A delta item: an event as it is now, or the id of one that left the view. */
export type DeltaItem = { instance: Instance } | { removed: string }

export interface DeltaPosition {
  /** Index into the round's list of events (creation order, or changed events in change order). */
  event: number
  /** Items of that event already answered. */
  item: number
}

const COLORS = ['auto', 'lightBlue', 'lightGreen', 'lightOrange', 'lightGray', 'lightYellow', 'lightTeal', 'lightPink', 'lightBrown', 'lightRed']

const overlaps = (content: Content, fromMs: number, toMs: number): boolean => {
  const { start, end } = content
  if (end.ms === start.ms) return start.ms >= fromMs && start.ms < toMs
  return start.ms < toMs && end.ms > fromMs
}

export class Calendars {
  private readonly calendars = new Map<string, Calendar>()
  private readonly byOwner = new Map<string, string[]>()
  /** Event id (series id for instances) -> calendar id. */
  private readonly eventCalendar = new Map<string, string>()
  private nextColor = 0

  constructor (private readonly now: () => number, private readonly onChange: ChangeListener) {}

  create (owner: { oid: string, name: string, email: string }, input: CalendarInput, isDefault: boolean): Calendar {
    const prefix = randomBytes(16)
    const calendar: Calendar = {
      id: newItemId(),
      ownerOid: owner.oid,
      ownerName: owner.name,
      ownerEmail: owner.email,
      name: input.name ?? 'Calendar',
      color: input.color ?? (isDefault ? 'auto' : COLORS[1 + (this.nextColor++ % (COLORS.length - 1))] ?? 'auto'),
      hexColor: input.hexColor ?? '',
      isDefault,
      canEdit: input.canEdit ?? true,
      changeKeyPrefix: prefix,
      changeKey: changeKeyOf(prefix, 0),
      seq: 0,
      epoch: randomText(6),
      events: new Map(),
      order: [],
      changes: [],
      transactions: new Map()
    }
    this.calendars.set(calendar.id, calendar)
    this.byOwner.set(owner.oid, [...(this.byOwner.get(owner.oid) ?? []), calendar.id])
    return calendar
  }

  get (id: string): Calendar | undefined {
    return this.calendars.get(id)
  }

  of (oid: string): Calendar[] {
    return (this.byOwner.get(oid) ?? []).map((id) => this.calendars.get(id)).filter((calendar): calendar is Calendar => calendar !== undefined)
  }

  defaultOf (oid: string): Calendar | undefined {
    return this.of(oid).find((calendar) => calendar.isDefault)
  }

  removeCalendar (calendar: Calendar): void {
    this.calendars.delete(calendar.id)
    this.byOwner.set(calendar.ownerOid, (this.byOwner.get(calendar.ownerOid) ?? []).filter((id) => id !== calendar.id))
    for (const id of calendar.order) this.eventCalendar.delete(id)
  }

  /** Every delta token of the calendar answers 410 from now on. */
  expireDeltaTokens (calendar: Calendar): void {
    calendar.epoch = randomText(6)
  }

  /** The calendar an event id (or an occurrence's id) belongs to. */
  calendarOfEvent (id: string): Calendar | undefined {
    const parsed = parseItemId(id)
    const eventId = parsed?.kind === 'instance' ? parsed.seriesId : id
    const calendarId = this.eventCalendar.get(eventId)
    return calendarId === undefined ? undefined : this.calendars.get(calendarId)
  }

  /** What an id names in the calendar: a live event, or a live occurrence or exception of a series. */
  resolve (calendar: Calendar, id: string): Target | undefined {
    const parsed = parseItemId(id)
    if (parsed === undefined) throw graphErrors.malformedId()
    if (parsed.kind === 'item') {
      const event = calendar.events.get(id)
      return event === undefined || event.deleted ? undefined : { kind: 'item', event }
    }
    const master = calendar.events.get(parsed.seriesId)
    if (master === undefined || master.deleted || master.recurrence === undefined) return undefined
    const exception = master.exceptions.get(parsed.originalStartMs)
    if (exception !== undefined) return exception.cancelled ? undefined : { kind: 'instance', master, originalStartMs: parsed.originalStartMs, exception }
    if (!isOccurrence(master.recurrence, master.content.start.wall, master.content.start.zone, parsed.originalStartMs)) return undefined
    return { kind: 'instance', master, originalStartMs: parsed.originalStartMs }
  }

  instanceOf (target: Target): Instance {
    return target.kind === 'item' ? itemInstance(target.event) : occurrenceInstance(target.master, target.originalStartMs, target.exception)
  }

  /** Creates an event (by `control` or an application); a transactionId seen before answers the earlier event. */
  insert (calendar: Calendar, write: EventWrite, by: string): StoredEvent {
    const [event] = this.insertMany(calendar, [write], by)
    if (event === undefined) throw new Error('insert wrote nothing')
    return event
  }

  /** Many creations, announced together. */
  insertMany (calendar: Calendar, writes: EventWrite[], by: string): StoredEvent[] {
    const created: StoredEvent[] = []
    const notices: ChangeNotice[] = []
    const prepared = writes.map((write) => {
      const earlier = write.transactionId === undefined ? undefined : calendar.transactions.get(write.transactionId)
      const existing = earlier === undefined ? undefined : calendar.events.get(earlier)
      if (existing !== undefined && !existing.deleted) return existing
      return this.prepare(calendar, write, by)
    })
    for (const event of prepared) {
      if (calendar.events.has(event.id)) {
        created.push(event)
        continue
      }
      const stamped = this.stamp(calendar, event)
      calendar.events.set(stamped.id, stamped)
      calendar.order.push(stamped.id)
      this.eventCalendar.set(stamped.id, calendar.id)
      if (stamped.transactionId !== undefined) calendar.transactions.set(stamped.transactionId, stamped.id)
      calendar.changes.push({ seq: calendar.seq, eventId: stamped.id, before: undefined })
      created.push(stamped)
      notices.push({ changeType: 'created', eventId: stamped.id, changeKey: stamped.changeKey })
    }
    if (notices.length > 0) this.onChange(calendar, notices)
    return created
  }

  /** PATCH: an event or series master takes the given properties; an occurrence becomes an exception. */
  update (calendar: Calendar, target: Target, write: EventWrite, by: string): Instance {
    const now = this.now()
    if (target.kind === 'instance') {
      if (write.recurrence !== undefined) throw graphErrors.validation('The recurrence of an occurrence cannot be set; change the series master instead.')
      const base = target.exception?.patch ?? {}
      const patch: ContentPatch = { ...base, ...write.patch, extra: { ...base.extra, ...write.patch.extra } }
      mergeContent(occurrenceContent(target.master.content, target.originalStartMs), patch)
      const { master, record } = this.commitException(calendar, target, this.nextSeq(calendar), { cancelled: false, patch }, by, now)
      return occurrenceInstance(master, target.originalStartMs, record)
    }
    const current = target.event
    const content = mergeContent(current.content, write.patch)
    let recurrence = current.recurrence
    if (write.recurrence !== undefined) recurrence = write.recurrence ?? undefined
    const type = recurrence === undefined ? 'singleInstance' : 'seriesMaster'
    const timesChanged = write.recurrence !== undefined || write.patch.start !== undefined || write.patch.end !== undefined || write.patch.isAllDay !== undefined
    // Outlook drops a series' exceptions when its pattern or times change.
    const exceptions = type === 'seriesMaster' && !timesChanged ? current.exceptions : new Map<number, ExceptionRecord>()
    if (recurrence !== undefined) checkSeries(content, recurrence)
    const seq = this.nextSeq(calendar)
    const next: StoredEvent = {
      ...current,
      type,
      content,
      exceptions,
      lastModified: now,
      lastModifiedBy: by,
      changeKey: changeKeyOf(calendar.changeKeyPrefix, seq)
    }
    if (recurrence === undefined) delete next.recurrence
    else next.recurrence = recurrence
    this.commit(calendar, next, current, seq)
    this.onChange(calendar, [{ changeType: 'updated', eventId: next.id, changeKey: next.changeKey }])
    return itemInstance(next)
  }

  /** DELETE: an event or a whole series goes; an occurrence or exception is cancelled. */
  remove (calendar: Calendar, target: Target, by: string): void {
    const now = this.now()
    const seq = this.nextSeq(calendar)
    const changeKey = changeKeyOf(calendar.changeKeyPrefix, seq)
    if (target.kind === 'instance') {
      this.commitException(calendar, target, seq, { cancelled: true, patch: {} }, by, now)
      return
    }
    const next: StoredEvent = { ...target.event, deleted: true, lastModified: now, lastModifiedBy: by, changeKey }
    this.commit(calendar, next, target.event, seq)
    this.onChange(calendar, [{ changeType: 'deleted', eventId: next.id, changeKey }])
  }

  // An occurrence is never stored on its own: its change is an exception record of its series
  // master, and Graph announces it as an update of that master.
  private commitException (calendar: Calendar, target: InstanceTarget, seq: number, change: Pick<ExceptionRecord, 'cancelled' | 'patch'>, by: string, now: number): { master: StoredEvent, record: ExceptionRecord } {
    const record: ExceptionRecord = {
      originalStartMs: target.originalStartMs,
      ...change,
      changeKey: changeKeyOf(calendar.changeKeyPrefix, seq),
      created: target.exception?.created ?? now,
      lastModified: now,
      lastModifiedBy: by
    }
    const master: StoredEvent = { ...target.master, exceptions: new Map(target.master.exceptions).set(target.originalStartMs, record) }
    this.commit(calendar, master, target.master, seq, target.originalStartMs)
    this.onChange(calendar, [{ changeType: 'updated', eventId: master.id, changeKey: master.changeKey }])
    return { master, record }
  }

  /** Live single events and series masters, in creation order (what `/events` lists). */
  items (calendar: Calendar): StoredEvent[] {
    const items: StoredEvent[] = []
    for (const id of calendar.order) {
      const event = calendar.events.get(id)
      if (event !== undefined && !event.deleted) items.push(event)
    }
    return items
  }

  /** Single events, occurrences and exceptions meeting the window, by start (a calendar view). */
  view (calendar: Calendar, fromMs: number, toMs: number): Instance[] {
    const instances: Instance[] = []
    for (const id of calendar.order) {
      const event = calendar.events.get(id)
      if (event !== undefined) instances.push(...instancesInWindow(event, fromMs, toMs))
    }
    return instances.sort((a, b) => a.content.start.ms - b.content.start.ms)
  }

  /** A series' occurrences and exceptions meeting the window (`/events/{id}/instances`). */
  seriesInstances (master: StoredEvent, fromMs: number, toMs: number): Instance[] {
    return instancesInWindow(master, fromMs, toMs)
  }

  /**
   * One page of a delta round. A first round (`since` undefined) lists what meets the window as of
   * the round; a later one lists what changed after `since` up to `upTo`: changed events as they
   * are now, and `@removed` for occurrences that left the window and for changed events outside it.
   */
  deltaPage (calendar: Calendar, window: { from: number, to: number }, since: number | undefined, upTo: number, position: DeltaPosition, pageSize: number):
  { items: DeltaItem[], next: DeltaPosition | undefined } {
    const items: DeltaItem[] = []
    const groups = since === undefined ? undefined : groupChanges(calendar, since, upTo)
    const count = groups === undefined ? calendar.order.length : groups.length
    let { event: index, item: skip } = position
    for (; index < count; index++) {
      let eventItems: DeltaItem[]
      if (groups === undefined) {
        const event = calendar.events.get(calendar.order[index] ?? '')
        eventItems = event === undefined ? [] : instancesInWindow(event, window.from, window.to).map((instance) => ({ instance }))
      } else {
        const group = groups[index]
        eventItems = group === undefined ? [] : changedItems(calendar, group, window.from, window.to)
      }
      while (skip < eventItems.length) {
        if (items.length === pageSize) return { items, next: { event: index, item: skip } }
        const item = eventItems[skip]
        if (item !== undefined) items.push(item)
        skip++
      }
      skip = 0
    }
    return { items, next: undefined }
  }

  private prepare (calendar: Calendar, write: EventWrite, by: string): StoredEvent {
    const content = newContent(write)
    const recurrence = write.recurrence ?? undefined
    if (recurrence !== undefined) checkSeries(content, recurrence)
    const now = this.now()
    const event: StoredEvent = {
      id: newItemId(),
      calendarId: calendar.id,
      type: recurrence === undefined ? 'singleInstance' : 'seriesMaster',
      content,
      exceptions: new Map(),
      iCalUId: newICalUid(),
      created: now,
      lastModified: now,
      changeKey: '',
      deleted: false,
      createdBy: by,
      lastModifiedBy: by
    }
    if (recurrence !== undefined) event.recurrence = recurrence
    if (write.transactionId !== undefined) event.transactionId = write.transactionId
    return event
  }

  private stamp (calendar: Calendar, event: StoredEvent): StoredEvent {
    const seq = this.nextSeq(calendar)
    return { ...event, changeKey: changeKeyOf(calendar.changeKeyPrefix, seq) }
  }

  private nextSeq (calendar: Calendar): number {
    calendar.seq++
    calendar.changeKey = changeKeyOf(calendar.changeKeyPrefix, calendar.seq)
    return calendar.seq
  }

  private commit (calendar: Calendar, next: StoredEvent, before: StoredEvent, seq: number, instance?: number): void {
    calendar.events.set(next.id, next)
    calendar.changes.push({ seq, eventId: next.id, before, ...(instance === undefined ? {} : { instance }) })
  }
}

/** A series needs at least one occurrence; its start zone is where occurrences are counted. */
function checkSeries (content: Content, recurrence: Recurrence): void {
  checkContent(content)
  if (firstOccurrence(recurrence, content.start.wall, content.start.zone) === undefined) {
    throw graphErrors.validation('Recurrence: the range holds no occurrence of the pattern.')
  }
}

function itemInstance (event: StoredEvent): Instance {
  const instance: Instance = {
    id: event.id,
    type: event.type,
    content: event.content,
    changeKey: event.changeKey,
    created: event.created,
    lastModified: event.lastModified,
    iCalUId: event.iCalUId,
    originalStartTimeZone: event.content.start.zoneName,
    originalEndTimeZone: event.content.end.zoneName
  }
  if (event.recurrence !== undefined) instance.recurrence = event.recurrence
  if (event.transactionId !== undefined) instance.transactionId = event.transactionId
  return instance
}

/** An occurrence (or, with its record, an exception) of a series. */
function occurrenceInstance (master: StoredEvent, originalStartMs: number, exception: ExceptionRecord | undefined): Instance {
  const occurrence = occurrenceContent(master.content, originalStartMs)
  const changed = exception !== undefined && !exception.cancelled
  return {
    id: instanceItemId(master.id, originalStartMs),
    type: changed ? 'exception' : 'occurrence',
    content: changed ? mergeContent(occurrence, exception.patch) : occurrence,
    changeKey: changed ? exception.changeKey : master.changeKey,
    created: changed ? exception.created : master.created,
    lastModified: changed ? exception.lastModified : master.lastModified,
    iCalUId: master.iCalUId,
    seriesMasterId: master.id,
    originalStartMs,
    originalStartTimeZone: master.content.start.zoneName,
    originalEndTimeZone: master.content.end.zoneName
  }
}

/** What of an event a calendar view over the window shows. */
function instancesInWindow (event: StoredEvent, fromMs: number, toMs: number): Instance[] {
  if (event.deleted) return []
  if (event.recurrence === undefined) return overlaps(event.content, fromMs, toMs) ? [itemInstance(event)] : []
  const { start, end } = event.content
  const instances: Instance[] = []
  for (const originalStartMs of occurrencesBetween(event.recurrence, start.wall, start.zone, end.ms - start.ms, fromMs, toMs)) {
    if (!event.exceptions.has(originalStartMs)) instances.push(occurrenceInstance(event, originalStartMs, undefined))
  }
  // An exception shows where it was moved to, whatever its original start.
  for (const exception of event.exceptions.values()) {
    if (exception.cancelled) continue
    const instance = occurrenceInstance(event, exception.originalStartMs, exception)
    if (overlaps(instance.content, fromMs, toMs)) instances.push(instance)
  }
  return instances.sort((a, b) => a.content.start.ms - b.content.start.ms)
}

interface ChangeGroup {
  eventId: string
  /** The event as it was when the round's token was issued. */
  before: StoredEvent | undefined
  /** Original starts of the only occurrences touched, or `all`. */
  instances: Set<number> | 'all'
}

/** The events changed after `since` up to `upTo`, each once, in the order of their first change. */
function groupChanges (calendar: Calendar, since: number, upTo: number): ChangeGroup[] {
  const groups = new Map<string, ChangeGroup>()
  for (let i = firstChangeAfter(calendar.changes, since); i < calendar.changes.length; i++) {
    const change = calendar.changes[i]
    if (change === undefined || change.seq > upTo) break
    let group = groups.get(change.eventId)
    if (group === undefined) {
      group = { eventId: change.eventId, before: change.before, instances: new Set() }
      groups.set(change.eventId, group)
    }
    if (change.instance === undefined || change.before === undefined) group.instances = 'all'
    else if (group.instances !== 'all') group.instances.add(change.instance)
  }
  return [...groups.values()]
}

function changedItems (calendar: Calendar, group: ChangeGroup, fromMs: number, toMs: number): DeltaItem[] {
  const stored = calendar.events.get(group.eventId)
  const live = stored !== undefined && !stored.deleted ? stored : undefined
  const items: DeltaItem[] = []
  const removed = new Set<string>()
  if (group.instances !== 'all') {
    for (const originalStartMs of group.instances) {
      const id = instanceItemId(group.eventId, originalStartMs)
      const exception = live?.exceptions.get(originalStartMs)
      if (live === undefined || live.recurrence === undefined || exception?.cancelled === true) {
        removed.add(id)
        continue
      }
      const instance = occurrenceInstance(live, originalStartMs, exception)
      if (overlaps(instance.content, fromMs, toMs)) items.push({ instance })
      else removed.add(id)
    }
  } else {
    const now = live === undefined ? [] : instancesInWindow(live, fromMs, toMs)
    const nowIds = new Set(now.map((instance) => instance.id))
    for (const instance of now) items.push({ instance })
    const before = group.before === undefined ? [] : instancesInWindow(group.before, fromMs, toMs)
    for (const instance of before) if (!nowIds.has(instance.id)) removed.add(instance.id)
    // A changed single event outside the window is answered as removed, as Graph documents.
    if ((live === undefined || live.recurrence === undefined) && !nowIds.has(group.eventId) && (stored?.recurrence === undefined)) removed.add(group.eventId)
  }
  for (const id of removed) items.push({ removed: id })
  return items
}
