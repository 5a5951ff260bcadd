// Everything the stand-in holds, in memory (a restart forgets it), and the operations of the
// control surface, which the HTTP routes under /_control and in-process callers share.
import { DateTime } from 'luxon'
import { AuthorizationEndpoint } from './authorization.js'
import { ACCESS_ROLES, Calendars } from './calendars.js'
import type { AccessRole, Calendar, CalendarInput, DefaultReminder } from './calendars.js'
import { Channels } from './channels.js'
import type { Channel, DeliveryOptions } from './channels.js'
import { ApiError, ControlError } from './errors.js'
import { isValidZone, readEventWrite, renderEvent } from './events.js'
import type { EventResource, EventWrite, StoredEvent, StoredTime } from './events.js'
import { planSeed, readSeedCounts, StandInState } from '../stand-in/state.js'
import type { SeedDate, SeedGenerator, SeedResult, StandInStateOptions } from '../stand-in/state.js'
import { readFaultInput } from './faults.js'
import type { FaultInput } from './faults.js'
import { Identity } from './identity.js'
import type { Account, Lifetimes } from './identity.js'
import type { SigningKeys } from './keys.js'
import { newEventId } from './secrets.js'
import { wallClockText, wallClockToMillis } from './zones.js'

export interface AccountSetup {
  email: string
  name?: string
  emailVerified?: boolean
  picture?: string
  timeZone?: string
  /**
   * Calendars besides the primary one (which every account gets), e.g. `{ summary, hidden: true }`;
   * `accessRole: 'reader'` makes one the account can only read.
   */
  calendars?: CalendarInput[]
}

export interface AccountView {
  sub: string
  email: string
  name: string
  emailVerified: boolean
  timeZone: string
  calendars: CalendarView[]
  grants: Array<{ clientId: string, scopes: string[], refreshTokens: number }>
}

export interface CalendarView {
  id: string
  summary: string
  primary: boolean
  hidden: boolean
  accessRole: AccessRole
  timeZone: string
  backgroundColor: string
  defaultReminders: DefaultReminder[]
  events: number
}

export type { SeedGenerator, SeedResult } from '../stand-in/state.js'

export interface ChannelView {
  id: string
  resourceId: string
  resourceUri: string
  calendarId: string
  account: string
  address: string
  expiration: string
  state: Channel['state']
  delivered: number
  failed: number
  pending: number
}

export type StateOptions = StandInStateOptions<SigningKeys, Lifetimes, DeliveryOptions>

export class GoogleState extends StandInState<Account, AccountView, Calendar, FaultInput, Channels['counts']> {
  readonly identity: Identity
  readonly calendars: Calendars
  readonly channels: Channels
  readonly authorization: AuthorizationEndpoint

  constructor (readonly options: StateOptions) {
    super(options.now)
    this.identity = new Identity(options.now, options.keys, () => this.origin, options.lifetimes)
    this.channels = new Channels(options.now, options.log, options.delivery)
    this.calendars = new Calendars(options.now, (calendar, state) => this.channels.notify(calendar.id, state))
    this.authorization = new AuthorizationEndpoint(this.identity, options.now)
  }

  /** Forgets what has expired: access tokens, codes, abandoned consent pages. */
  sweep (): void {
    this.identity.sweep()
    this.authorization.sweep()
  }

  createAccount (setup: AccountSetup): AccountView {
    if (typeof setup.email !== 'string') throw new ControlError(400, 'email is required')
    if (setup.timeZone !== undefined && !isValidZone(setup.timeZone)) throw new ControlError(400, `unknown time zone ${setup.timeZone}`)
    // Checked before the account exists, so a refused calendar leaves no half-made account behind.
    for (const input of setup.calendars ?? []) checkCalendarInput(input)
    let account: Account
    try {
      account = this.identity.createAccount(setup)
    } catch (err) {
      throw new ControlError(409, (err as Error).message)
    }
    this.calendars.create(account, {}, true)
    for (const input of setup.calendars ?? []) this.addCalendar(account.email, input)
    return this.accountView(account)
  }

  accountView (account: Account): AccountView {
    return {
      sub: account.sub,
      email: account.email,
      name: account.name,
      emailVerified: account.emailVerified,
      timeZone: account.timeZone,
      calendars: this.calendars.of(account.sub).map(calendarView),
      grants: this.identity.summary(account.sub)
    }
  }

  addCalendar (email: string, input: CalendarInput): CalendarView {
    const account = this.account(email)
    checkCalendarInput(input)
    try {
      return calendarView(this.calendars.create(account, input, false))
    } catch (err) {
      throw new ControlError(409, (err as Error).message)
    }
  }

  /** As the person would in Google Calendar's settings of the calendar; the events keeping the default follow. */
  setDefaultReminders (calendarId: string, reminders: unknown): CalendarView {
    const calendar = this.calendar(calendarId)
    if (reminders === undefined) throw new ControlError(400, 'defaultReminders is required')
    checkCalendarInput({ defaultReminders: reminders as DefaultReminder[] })
    this.calendars.setDefaultReminders(calendar, reminders as DefaultReminder[])
    return calendarView(calendar)
  }

  deleteCalendar (calendarId: string): void {
    const calendar = this.calendar(calendarId)
    if (calendar.primary) throw new ControlError(400, 'a primary calendar cannot be deleted')
    this.calendars.remove(calendar)
  }

  /** An event written by "another device": stored, numbered, and announced to the calendar's watchers. */
  insertEvent (calendarId: string, body: unknown): EventResource {
    const calendar = this.calendar(calendarId)
    return this.render(calendar, asControlError(() => this.calendars.insert(calendar, readEventWrite(body, calendar.timeZone), calendar.ownerEmail)))
  }

  patchEvent (calendarId: string, eventId: string, body: unknown): EventResource {
    const calendar = this.calendar(calendarId)
    const current = this.event(calendar, eventId)
    return this.render(calendar, asControlError(() => this.calendars.modify(calendar, current, readEventWrite(body, calendar.timeZone), 'patch')))
  }

  deleteEvent (calendarId: string, eventId: string): EventResource {
    const calendar = this.calendar(calendarId)
    const current = this.event(calendar, eventId)
    return this.render(calendar, asControlError(() => this.calendars.cancel(calendar, current)))
  }

  /** Many events at once, announced as one change. */
  seed (calendarId: string, input: { events?: unknown[], generate?: SeedGenerator }): SeedResult {
    const started = performance.now()
    const calendar = this.calendar(calendarId)
    const writes: EventWrite[] = asControlError(() => (input.events ?? []).map((body) => readEventWrite(body, calendar.timeZone)))
    const generated = input.generate === undefined ? { writes: [], singles: 0, series: 0, exceptions: 0 } : generateEvents(calendar, input.generate, this.now())
    const all = [...writes, ...generated.writes]
    const inserted = asControlError(() => this.calendars.insertMany(calendar, all, calendar.ownerEmail))
    return {
      inserted: inserted.length,
      singles: generated.singles,
      series: generated.series,
      exceptions: generated.exceptions,
      tookMs: Math.round(performance.now() - started)
    }
  }

  /** Every event as stored, deleted ones included with their content. */
  storedEvents (calendarId: string): EventResource[] {
    const calendar = this.calendar(calendarId)
    return calendar.order.map((id) => calendar.events.get(id)).filter((event): event is StoredEvent => event !== undefined)
      .map((event) => this.render(calendar, event))
  }

  revoke (email: string, clientId?: string): { revoked: number } {
    return { revoked: this.identity.revokeAccount(this.account(email).sub, clientId) }
  }

  expireAccessTokens (email: string): { expired: number } {
    return { expired: this.identity.expireAccessTokens(this.account(email).sub) }
  }

  expireSyncTokens (target: { email?: string, calendarId?: string }): { calendars: string[] } {
    const calendars = target.calendarId !== undefined
      ? [this.calendar(target.calendarId)]
      : this.calendars.of(this.account(target.email ?? '').sub)
    for (const calendar of calendars) this.calendars.expireSyncTokens(calendar)
    return { calendars: calendars.map((calendar) => calendar.id) }
  }

  protected readFault (body: unknown): FaultInput {
    return readFaultInput(body)
  }

  protected notificationCounts (): Channels['counts'] {
    return this.channels.counts
  }

  listChannels (): ChannelView[] {
    return this.channels.list().map((channel) => ({
      id: channel.id,
      resourceId: channel.resourceId,
      resourceUri: channel.resourceUri,
      calendarId: channel.calendarId,
      account: this.identity.accountBySub(channel.ownerSub)?.email ?? '',
      address: channel.address,
      expiration: new Date(channel.expiration).toISOString(),
      state: channel.state,
      delivered: channel.delivered,
      failed: channel.failed,
      pending: channel.pending
    }))
  }

  private event (calendar: Calendar, eventId: string): StoredEvent {
    const event = this.calendars.find(calendar, eventId)
    if (event === undefined) throw new ControlError(404, `no event ${eventId} in ${calendar.id}`)
    return event
  }

  private render (calendar: Calendar, event: StoredEvent): EventResource {
    return renderEvent(event, {
      displayZone: calendar.timeZone,
      calendarId: calendar.id,
      origin: this.origin,
      ownerEmail: calendar.ownerEmail,
      minimalWhenCancelled: false
    })
  }
}

function isDefaultReminder (item: unknown): boolean {
  if (typeof item !== 'object' || item === null) return false
  const { method, minutes } = item as Record<string, unknown>
  return (method === 'email' || method === 'popup') && typeof minutes === 'number' && Number.isInteger(minutes) && minutes >= 0 && minutes <= 40_320
}

function checkCalendarInput (input: CalendarInput): void {
  if (input.timeZone !== undefined && !isValidZone(input.timeZone)) throw new ControlError(400, `unknown time zone ${input.timeZone}`)
  if (input.accessRole !== undefined && !ACCESS_ROLES.includes(input.accessRole)) {
    throw new ControlError(400, `calendar accessRole must be one of ${ACCESS_ROLES.join(', ')}`)
  }
  const reminders: unknown = input.defaultReminders
  if (reminders === undefined) return
  // Google's limits on reminders: at most 5, each `email` or `popup`, 0 to 40320 minutes (4 weeks).
  if (!Array.isArray(reminders) || reminders.length > 5 || !reminders.every(isDefaultReminder)) throw new ControlError(400, 'calendar defaultReminders must be at most 5 of { method: email or popup, minutes: 0 to 40320 }')
}

function calendarView (calendar: Calendar): CalendarView {
  return {
    id: calendar.id,
    summary: calendar.summary,
    primary: calendar.primary,
    hidden: calendar.hidden,
    accessRole: calendar.accessRole,
    timeZone: calendar.timeZone,
    backgroundColor: calendar.backgroundColor,
    defaultReminders: calendar.defaultReminders,
    events: calendar.events.size
  }
}

/** Runs a write; a Calendar API refusal becomes a control-surface 400 with the same message. */
function asControlError<T> (write: () => T): T {
  try {
    return write()
  } catch (err) {
    if (err instanceof ApiError) throw new ControlError(err.statusCode === 409 ? 409 : 400, err.message)
    throw err
  }
}

function generateEvents (calendar: Calendar, spec: SeedGenerator, now: number): { writes: EventWrite[], singles: number, series: number, exceptions: number } {
  const { counts, days } = readSeedCounts(spec)
  const zone = calendar.timeZone
  const first = spec.from === undefined
    ? DateTime.fromMillis(now, { zone }).startOf('day').minus({ days: 180 })
    : DateTime.fromISO(spec.from, { zone })
  if (!first.isValid || (spec.from !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(spec.from))) throw new ControlError(400, 'generate.from must be a date (YYYY-MM-DD)')
  if (counts.exceptions > 0 && counts.series === 0) throw new ControlError(400, 'exceptions need series')
  const plan = planSeed(counts, days, { y: first.year, m: first.month, d: first.day })
  const time = (day: SeedDate, hour: number, minute = 0): StoredTime =>
    ({ dateTime: wallClockText(day.y, day.m, day.d, hour, minute), timeZone: zone, ms: wallClockToMillis(zone, day.y, day.m, day.d, hour, minute) })
  const date = (day: SeedDate): StoredTime =>
    ({ date: wallClockText(day.y, day.m, day.d).slice(0, 10), ms: wallClockToMillis(zone, day.y, day.m, day.d) })
  const writes: EventWrite[] = []

  for (const single of plan.singles) {
    if (single.allDay) {
      writes.push({ summary: `All-day ${single.index}`, start: date(single.day), end: date(single.nextDay), extra: {} })
    } else {
      const { day, hour, minute } = single
      writes.push({ summary: `Event ${single.index}`, ...(single.room === undefined ? {} : { location: single.room }), start: time(day, hour, minute), end: time(day, hour + 1, minute), extra: {} })
    }
  }
  const seriesIds: string[] = []
  for (const series of plan.series) {
    const id = newEventId()
    seriesIds.push(id)
    writes.push({
      id,
      summary: `Series ${series.index}`,
      start: time(series.day, series.hour),
      end: time(series.day, series.hour, 30),
      recurrence: [`RRULE:FREQ=${series.daily ? 'DAILY' : 'WEEKLY'};COUNT=${series.occurrences}`],
      extra: {}
    })
  }
  for (const exception of plan.exceptions) {
    const write: EventWrite = { recurringEventId: seriesIds[exception.series] ?? '', originalStartTime: time(exception.day, exception.hour), extra: {} }
    if (exception.cancelled) {
      write.status = 'cancelled'
    } else {
      Object.assign(write, { summary: `Series ${exception.series} (moved)`, start: time(exception.day, exception.hour + 1), end: time(exception.day, exception.hour + 1, 30) })
    }
    writes.push(write)
  }
  return { writes, ...counts }
}
