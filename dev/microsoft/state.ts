// Everything the stand-in holds, in memory (a restart forgets it), and the operations of the
// control surface, which the HTTP routes under /_control and in-process callers share.
import { AuthorizationEndpoint } from './authorization.js'
import { Calendars } from './calendars.js'
import type { Calendar, CalendarInput, StoredEvent } from './calendars.js'
import { ControlError, GraphError } from './errors.js'
import { readEventWrite, renderInstance } from './events.js'
import type { EventResource, EventTime, EventWrite } from './events.js'
import { planSeed, readSeedCounts, seedDay, StandInState } from '../stand-in/state.js'
import type { SeedDate, SeedGenerator, SeedResult, StandInStateOptions } from '../stand-in/state.js'
import { readFaultInput } from './faults.js'
import type { FaultInput } from './faults.js'
import { Identity } from './identity.js'
import type { Account, AccountInput, Lifetimes, RevocationReason } from './identity.js'
import type { SigningKeys } from './keys.js'
import { dateTimeOffset, Subscriptions } from './subscriptions.js'
import type { DeliveryCounts, DeliveryOptions, LifecycleEvent, Subscription } from './subscriptions.js'
import { ianaZone, millisToWall, utcText, wallToMillis } from './zones.js'
import type { Wall } from './zones.js'
import { instanceItemId } from './secrets.js'

export interface AccountSetup extends AccountInput {
  /** Calendars besides the default one ("Calendar"), which every account gets. */
  calendars?: CalendarInput[]
}

export interface CalendarView {
  id: string
  name: string
  isDefaultCalendar: boolean
  canEdit: boolean
  color: string
  /** Live single events and series masters. */
  items: number
}

export interface AccountView {
  email: string
  name: string
  kind: Account['kind']
  /** Graph's user id. */
  id: string
  oid: string
  tenantId: string
  timeZone: string
  calendars: CalendarView[]
  grants: Array<{ clientId: string, scopes: string[], refreshTokens: number }>
}

export type { SeedGenerator, SeedResult } from '../stand-in/state.js'

export interface SubscriptionView {
  id: string
  account: string
  clientId: string
  resource: string
  changeType: string
  notificationUrl: string
  lifecycleNotificationUrl: string | null
  expirationDateTime: string
  state: 'active' | 'expired' | 'deleted' | 'removed'
  reauthorizationRequired: boolean
  delivered: number
  failed: number
}

export type StateOptions = StandInStateOptions<SigningKeys, Lifetimes, DeliveryOptions>

export class MicrosoftState extends StandInState<Account, AccountView, Calendar, FaultInput, DeliveryCounts> {
  readonly identity: Identity
  readonly calendars: Calendars
  readonly subscriptions: Subscriptions
  readonly authorization: AuthorizationEndpoint

  constructor (readonly options: StateOptions) {
    super(options.now)
    this.identity = new Identity(options.now, options.keys, () => this.origin, options.lifetimes)
    this.subscriptions = new Subscriptions(options.now, options.log, options.delivery)
    // Change notifications pause for an application whose grant ended, until it is authorized again.
    this.calendars = new Calendars(options.now, (calendar, notices) =>
      this.subscriptions.notify(calendar.id, notices, (subscription) => !this.identity.hasGrant(subscription.clientId, subscription.ownerOid)))
    this.authorization = new AuthorizationEndpoint(this.identity, options.now)
  }

  sweep (): void {
    this.identity.sweep()
    this.authorization.sweep()
    this.subscriptions.sweep()
  }

  createAccount (setup: AccountSetup): AccountView {
    if (typeof setup.email !== 'string') throw new ControlError(400, 'email is required')
    let account: Account
    try {
      account = this.identity.createAccount(setup)
    } catch (err) {
      throw new ControlError((err as Error).message.includes('exists already') ? 409 : 400, (err as Error).message)
    }
    this.calendars.create({ oid: account.oid, name: account.name, email: account.email }, { name: 'Calendar' }, true)
    for (const input of setup.calendars ?? []) this.addCalendar(account.email, input)
    return this.accountView(account)
  }

  accountView (account: Account): AccountView {
    return {
      email: account.email,
      name: account.name,
      kind: account.kind,
      id: account.graphId,
      oid: account.oid,
      tenantId: account.tid,
      timeZone: account.timeZone,
      calendars: this.calendars.of(account.oid).map((calendar) => this.calendarView(calendar)),
      grants: this.identity.summary(account.oid)
    }
  }

  addCalendar (email: string, input: CalendarInput): CalendarView {
    const account = this.account(email)
    if (input.name !== undefined && (typeof input.name !== 'string' || input.name === '')) throw new ControlError(400, 'name must be a non-empty string')
    const taken = this.calendars.of(account.oid).some((calendar) => calendar.name.toLowerCase() === (input.name ?? 'Calendar').toLowerCase())
    // Outlook refuses a second calendar of the same name (ErrorFolderExists).
    if (taken) throw new ControlError(409, `a calendar named ${input.name ?? 'Calendar'} exists already`)
    return this.calendarView(this.calendars.create({ oid: account.oid, name: account.name, email: account.email }, input, false))
  }

  /** Removes a calendar; subscriptions watching only it are removed (with `subscriptionRemoved`). */
  deleteCalendar (calendarId: string): void {
    const calendar = this.calendar(calendarId)
    if (calendar.isDefault) throw new ControlError(400, 'the default calendar cannot be deleted')
    this.calendars.removeCalendar(calendar)
    for (const subscription of this.subscriptions.list()) {
      if (!subscription.calendarIds.delete(calendar.id) || subscription.calendarIds.size > 0) continue
      if (this.subscriptions.isActive(subscription)) this.subscriptions.lifecycle(subscription, 'subscriptionRemoved')
    }
  }

  /** An event written by "another device": stored, numbered, and announced to subscriptions. */
  insertEvent (calendarId: string, body: unknown): EventResource {
    const calendar = this.calendar(calendarId)
    const event = asControlError(() => this.calendars.insert(calendar, readEventWrite(body, this.zoneName(calendar)), 'control'))
    return this.render(calendar, event)
  }

  /** A change by another device; an occurrence's id makes an exception. */
  patchEvent (calendarId: string, eventId: string, body: unknown): EventResource {
    const calendar = this.calendar(calendarId)
    return asControlError(() => {
      const target = this.calendars.resolve(calendar, eventId)
      if (target === undefined) throw new ControlError(404, `no event ${eventId} in ${calendarId}`)
      const zoneName = target.kind === 'item' ? target.event.content.start.zoneName : target.master.content.start.zoneName
      const instance = this.calendars.update(calendar, target, readEventWrite(body, zoneName), 'control')
      return renderInstance(instance, this.renderOptions(calendar))
    })
  }

  /** A deletion by another device; an occurrence's id deletes that occurrence only. */
  deleteEvent (calendarId: string, eventId: string): void {
    const calendar = this.calendar(calendarId)
    asControlError(() => {
      const target = this.calendars.resolve(calendar, eventId)
      if (target === undefined) throw new ControlError(404, `no event ${eventId} in ${calendarId}`)
      this.calendars.remove(calendar, target, 'control')
    })
  }

  /** Many events at once (as one batch of notifications). */
  seed (calendarId: string, input: { events?: unknown[], generate?: SeedGenerator }): SeedResult {
    const started = performance.now()
    const calendar = this.calendar(calendarId)
    const zoneName = this.zoneName(calendar)
    const writes = asControlError(() => (input.events ?? []).map((body) => readEventWrite(body, zoneName)))
    const generated = input.generate === undefined
      ? { writes: [], singles: 0, series: 0, exceptions: [] }
      : generateEvents(input.generate, zoneName, this.now())
    const inserted = asControlError(() => this.calendars.insertMany(calendar, [...writes, ...generated.writes], 'control'))
    const seriesIds = inserted.slice(writes.length + generated.singles).map((event) => event.id)
    asControlError(() => {
      for (const exception of generated.exceptions) {
        const seriesId = seriesIds[exception.series]
        if (seriesId === undefined) continue
        const target = this.calendars.resolve(calendar, instanceItemId(seriesId, exception.originalStartMs))
        if (target === undefined) continue
        if (exception.write === undefined) this.calendars.remove(calendar, target, 'control')
        else this.calendars.update(calendar, target, exception.write, 'control')
      }
    })
    return {
      inserted: inserted.length,
      singles: generated.singles,
      series: generated.series,
      exceptions: generated.exceptions.length,
      tookMs: Math.round(performance.now() - started)
    }
  }

  /**
   * Every event as stored, in creation order: deleted ones included (`deleted: true`), series with
   * their exceptions, and who wrote each (`control` or the application's client id).
   */
  storedEvents (calendarId: string): Array<Record<string, unknown>> {
    const calendar = this.calendar(calendarId)
    return calendar.order.map((id) => calendar.events.get(id)).filter((event): event is StoredEvent => event !== undefined).map((event) => {
      const instance = this.calendars.instanceOf({ kind: 'item', event })
      const options = this.renderOptions(calendar)
      return {
        ...renderInstance(instance, options),
        deleted: event.deleted,
        createdBy: event.createdBy,
        lastModifiedBy: event.lastModifiedBy,
        exceptions: [...event.exceptions.values()].map((exception) => ({
          ...(exception.cancelled
            ? { id: instanceItemId(event.id, exception.originalStartMs) }
            : renderInstance(this.calendars.instanceOf({ kind: 'instance', master: event, originalStartMs: exception.originalStartMs, exception }), options)),
          originalStart: utcText(exception.originalStartMs),
          cancelled: exception.cancelled,
          lastModifiedBy: exception.lastModifiedBy
        }))
      }
    })
  }

  /**
   * Ends the account's grants, as the person removing the app's permissions (`consent`, refresh
   * answers AADSTS65001) or an administrator revoking sessions (`sessions`, AADSTS50173) does.
   * Their subscriptions get `reauthorizationRequired` and their notifications pause.
   */
  revoke (email: string, options: { clientId?: string, reason?: RevocationReason } = {}): { revoked: number, subscriptions: number } {
    const account = this.account(email)
    const reason = options.reason ?? 'sessions'
    if (reason !== 'sessions' && reason !== 'consent') throw new ControlError(400, 'reason must be sessions or consent')
    const clients = new Set(this.identity.revokeAccount(account.oid, options.clientId, reason))
    let notified = 0
    for (const subscription of this.subscriptions.list()) {
      if (subscription.ownerOid === account.oid && clients.has(subscription.clientId) && this.subscriptions.isActive(subscription)) {
        if (this.subscriptions.lifecycle(subscription, 'reauthorizationRequired')) notified++
      }
    }
    return { revoked: clients.size, subscriptions: notified }
  }

  expireAccessTokens (email: string): { expired: number } {
    return { expired: this.identity.expireAccessTokens(this.account(email).oid) }
  }

  expireRefreshTokens (email: string): { expired: number } {
    return { expired: this.identity.expireRefreshTokens(this.account(email).oid) }
  }

  /** Every delta token of the calendars answers 410 SyncStateNotFound from now on. */
  expireDeltaTokens (target: { email?: string, calendarId?: string }): { calendars: string[] } {
    const calendars = target.calendarId !== undefined ? [this.calendar(target.calendarId)] : this.calendars.of(this.account(target.email ?? '').oid)
    for (const calendar of calendars) this.calendars.expireDeltaTokens(calendar)
    return { calendars: calendars.map((calendar) => calendar.id) }
  }

  /** Sends a lifecycle notification for a subscription, as Graph would. */
  sendLifecycle (subscriptionId: string, event: unknown): SubscriptionView {
    if (event !== 'reauthorizationRequired' && event !== 'subscriptionRemoved' && event !== 'missed') {
      throw new ControlError(400, 'lifecycleEvent must be reauthorizationRequired, subscriptionRemoved or missed')
    }
    const subscription = this.subscriptions.get(subscriptionId)
    if (subscription === undefined || !this.subscriptions.isActive(subscription)) throw new ControlError(404, `no active subscription ${subscriptionId}`)
    if (subscription.lifecycleNotificationUrl === undefined) throw new ControlError(409, 'the subscription has no lifecycleNotificationUrl')
    this.subscriptions.lifecycle(subscription, event as LifecycleEvent)
    return this.subscriptionView(subscription)
  }

  protected readFault (body: unknown): FaultInput {
    return readFaultInput(body)
  }

  protected notificationCounts (): DeliveryCounts {
    return this.subscriptions.counts
  }

  listSubscriptions (): SubscriptionView[] {
    return this.subscriptions.list().map((subscription) => this.subscriptionView(subscription))
  }

  subscriptionView (subscription: Subscription): SubscriptionView {
    const active = this.subscriptions.isActive(subscription)
    return {
      id: subscription.id,
      account: this.identity.accountByOid(subscription.ownerOid)?.email ?? '',
      clientId: subscription.clientId,
      resource: subscription.resource,
      changeType: subscription.changeType,
      notificationUrl: subscription.notificationUrl,
      lifecycleNotificationUrl: subscription.lifecycleNotificationUrl ?? null,
      expirationDateTime: dateTimeOffset(subscription.expiration),
      state: subscription.state === 'active' && !active ? 'expired' : subscription.state,
      reauthorizationRequired: subscription.reauthorizationRequired,
      delivered: subscription.delivered,
      failed: subscription.failed
    }
  }

  /** How the calendar's events are written out on the control surface: in UTC. */
  renderOptions (calendar: Calendar): Parameters<typeof renderInstance>[1] {
    return { origin: this.origin, zone: 'Etc/UTC', zoneName: 'UTC', organizer: { name: calendar.ownerName, address: calendar.ownerEmail } }
  }

  private calendarView (calendar: Calendar): CalendarView {
    return {
      id: calendar.id,
      name: calendar.name,
      isDefaultCalendar: calendar.isDefault,
      canEdit: calendar.canEdit,
      color: calendar.color,
      items: this.calendars.items(calendar).length
    }
  }

  /** The zone new events of the calendar default to: its owner's mailbox zone. */
  private zoneName (calendar: Calendar): string {
    return this.identity.accountByOid(calendar.ownerOid)?.timeZone ?? 'UTC'
  }

  private render (calendar: Calendar, event: StoredEvent): EventResource {
    return renderInstance(this.calendars.instanceOf({ kind: 'item', event }), this.renderOptions(calendar))
  }
}

/** Runs a write; a Graph refusal becomes a control-surface refusal with the same message. */
function asControlError<T> (write: () => T): T {
  try {
    return write()
  } catch (err) {
    if (err instanceof GraphError) throw new ControlError(err.statusCode === 404 ? 404 : 400, `${err.code}: ${err.message}`)
    throw err
  }
}

interface GeneratedException {
  series: number
  originalStartMs: number
  /** Undefined: the occurrence is deleted. */
  write?: EventWrite
}

function generateEvents (spec: SeedGenerator, zoneName: string, now: number): { writes: EventWrite[], singles: number, series: number, exceptions: GeneratedException[] } {
  const { counts, days } = readSeedCounts(spec)
  if (counts.exceptions > 0 && counts.series === 0) throw new ControlError(400, 'exceptions need series')
  const zone = ianaZone(zoneName) ?? 'Etc/UTC'
  let first: SeedDate
  if (spec.from === undefined) {
    first = seedDay(millisToWall(zone, now), -180)
  } else {
    const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(spec.from)
    if (match === null) throw new ControlError(400, 'generate.from must be a date (YYYY-MM-DD)')
    first = { y: Number(match[1]), m: Number(match[2]), d: Number(match[3]) }
  }
  const plan = planSeed(counts, days, first)
  const at = (day: SeedDate, h: number, min = 0): EventTime => {
    const wall: Wall = { ...day, h, min, s: 0 }
    return { wall, zone, zoneName, ms: wallToMillis(zone, wall) }
  }
  const writes: EventWrite[] = []
  for (const single of plan.singles) {
    if (single.allDay) {
      writes.push({ patch: { subject: `All-day ${single.index}`, isAllDay: true, start: at(single.day, 0), end: at(single.nextDay, 0) } })
    } else {
      const { day, hour: h, minute: min } = single
      writes.push({ patch: { subject: `Event ${single.index}`, ...(single.room === undefined ? {} : { location: { displayName: single.room } }), start: at(day, h, min), end: at(day, h + 1, min) } })
    }
  }
  const WEEKDAY_NAMES = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const
  for (const series of plan.series) {
    const { day, hour: h, daily } = series
    const weekday = WEEKDAY_NAMES[new Date(Date.UTC(day.y, day.m - 1, day.d)).getUTCDay()] ?? 'monday'
    const startDate = `${String(day.y).padStart(4, '0')}-${String(day.m).padStart(2, '0')}-${String(day.d).padStart(2, '0')}`
    writes.push({
      patch: { subject: `Series ${series.index}`, start: at(day, h), end: at(day, h, 30) },
      recurrence: {
        pattern: { type: daily ? 'daily' : 'weekly', interval: 1, month: 0, dayOfMonth: 0, daysOfWeek: daily ? [] : [weekday], firstDayOfWeek: 'sunday', index: 'first' },
        range: { type: 'numbered', startDate, endDate: '0001-01-01', recurrenceTimeZone: zoneName, numberOfOccurrences: series.occurrences }
      }
    })
  }
  const exceptions: GeneratedException[] = plan.exceptions.map(({ series, day, hour: h, cancelled }) => {
    const originalStartMs = at(day, h).ms
    return cancelled
      ? { series, originalStartMs }
      : { series, originalStartMs, write: { patch: { subject: `Series ${series} (moved)`, start: at(day, h + 1), end: at(day, h + 1, 30) } } }
  })
  return { writes, singles: counts.singles, series: counts.series, exceptions }
}
