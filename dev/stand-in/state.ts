// What every stand-in's state holds and answers alike on its control surface: the origin it
// serves on, armed faults and request counters, client registration, account and calendar look-ups,
// and the shape of a seed. Calendars, events and notification delivery stay each provider's own.
import type { FastifyBaseLogger } from 'fastify'
import { ControlError } from './control.js'
import { Counters, Faults } from './faults.js'
import type { Fault, FaultInput, OperationCount } from './faults.js'
import type { ClientRegistration } from './oauth.js'

export interface StandInStateOptions<Keys, Lifetimes, Delivery> {
  now: () => number
  keys: Keys
  lifetimes: Lifetimes
  delivery: Delivery
  log: FastifyBaseLogger
}

export interface SeedGenerator {
  /** Single events, one hour each (every tenth all-day), spread over `days` from `from`. */
  singles?: number
  /** Weekly series of 52 occurrences (every fourth one daily, 30 occurrences). */
  series?: number
  /** Exceptions spread over the series: every third one a removed occurrence (Google: cancelled, Microsoft: deleted), the others moved an hour. */
  exceptions?: number
  /** First day (YYYY-MM-DD); default 180 days before today. */
  from?: string
  /** Default 365. */
  days?: number
}

export interface SeedResult {
  inserted: number
  singles: number
  series: number
  exceptions: number
  tookMs: number
}

/** A seed generator's counts and span, checked. */
export function readSeedCounts (spec: SeedGenerator): { counts: { singles: number, series: number, exceptions: number }, days: number } {
  const counts = { singles: spec.singles ?? 0, series: spec.series ?? 0, exceptions: spec.exceptions ?? 0 }
  for (const [name, value] of Object.entries(counts)) {
    if (!Number.isInteger(value) || value < 0 || value > 1_000_000) throw new ControlError(400, `generate.${name} must be a non-negative integer`)
  }
  const days = spec.days ?? 365
  if (!Number.isInteger(days) || days < 1) throw new ControlError(400, 'generate.days must be a positive integer')
  return { counts, days }
}

interface StateIdentity<Account> {
  registerClient (client: ClientRegistration): void
  accountByEmail (email: string): Account | undefined
  listAccounts (): Account[]
}

/**
 * The base of a provider's state. `Notifications` is the provider's delivery counters (push
 * channels, Graph subscriptions), reported and reset with the request counters.
 */
export abstract class StandInState<Account, AccountView, Calendar, Input extends FaultInput, Notifications extends Record<keyof Notifications, number>> {
  origin = ''
  readonly faults = new Faults<Input>()
  readonly counters = new Counters()

  abstract readonly identity: StateIdentity<Account>
  abstract readonly calendars: { get (calendarId: string): Calendar | undefined }

  constructor (readonly now: () => number) {}

  abstract accountView (account: Account): AccountView
  protected abstract readFault (body: unknown): Input
  protected abstract notificationCounts (): Notifications

  registerClient (client: ClientRegistration): { clientId: string, redirectUris: string[] } {
    if (!Array.isArray(client.redirectUris) || client.redirectUris.some((uri) => typeof uri !== 'string' || !URL.canParse(uri))) {
      throw new ControlError(400, 'redirectUris must be absolute URLs')
    }
    try {
      this.identity.registerClient(client)
    } catch (err) {
      throw new ControlError(400, (err as Error).message)
    }
    return { clientId: client.clientId, redirectUris: [...client.redirectUris] }
  }

  account (email: string): Account {
    const account = this.identity.accountByEmail(email)
    if (account === undefined) throw new ControlError(404, `no account ${email}`)
    return account
  }

  listAccounts (): AccountView[] {
    return this.identity.listAccounts().map((account) => this.accountView(account))
  }

  calendar (calendarId: string): Calendar {
    const calendar = this.calendars.get(calendarId)
    if (calendar === undefined) throw new ControlError(404, `no calendar ${calendarId}`)
    return calendar
  }

  armFault (body: unknown): Fault<Input> {
    return this.faults.arm(this.readFault(body))
  }

  counts (): { operations: Record<string, OperationCount>, notifications: Notifications } {
    return { operations: this.counters.snapshot(), notifications: { ...this.notificationCounts() } }
  }

  resetCounts (): void {
    this.counters.reset()
    const notifications: Record<keyof Notifications, number> = this.notificationCounts()
    for (const key of Object.keys(notifications) as Array<keyof Notifications>) notifications[key] = 0
  }
}

export interface SeedDate { y: number, m: number, d: number }

/** Days are counted in UTC date arithmetic (no zone involved); times become instants in the provider's zone. */
export function seedDay (first: SeedDate, offset: number): SeedDate {
  const date = new Date(Date.UTC(first.y, first.m - 1, first.d + offset))
  return { y: date.getUTCFullYear(), m: date.getUTCMonth() + 1, d: date.getUTCDate() }
}

/** Where a generated seed puts its events; each provider writes them in its own event shape. */
export interface SeedPlan {
  singles: Array<{ index: number, day: SeedDate, nextDay: SeedDate, allDay: boolean, hour: number, minute: number, room: string | undefined }>
  series: Array<{ index: number, day: SeedDate, hour: number, daily: boolean, occurrences: number }>
  /** In the order they are applied; `series` is the index of the series they belong to. */
  exceptions: Array<{ series: number, day: SeedDate, hour: number, cancelled: boolean }>
}

/** The seed's layout: singles spread over `days`, series starting in the first week, exceptions spread over the series. */
export function planSeed (counts: { singles: number, series: number, exceptions: number }, days: number, first: SeedDate): SeedPlan {
  const plan: SeedPlan = { singles: [], series: [], exceptions: [] }
  for (let index = 0; index < counts.singles; index++) {
    plan.singles.push({
      index,
      day: seedDay(first, index % days),
      nextDay: seedDay(first, (index % days) + 1),
      allDay: index % 10 === 9,
      hour: 8 + (index % 10),
      minute: (index % 4) * 15,
      room: index % 3 === 0 ? `Room ${index % 7}` : undefined
    })
  }
  const firstDays: number[] = []
  for (let index = 0; index < counts.series; index++) {
    const firstDay = index % Math.min(days, 7)
    const daily = index % 4 === 3
    firstDays.push(firstDay)
    plan.series.push({ index, day: seedDay(first, firstDay), hour: 9 + (index % 8), daily, occurrences: daily ? 30 : 52 })
  }
  for (let j = 0; j < counts.exceptions; j++) {
    const index = j % counts.series
    const occurrence = Math.floor(j / counts.series) + 1
    const entry = plan.series[index]
    if (entry === undefined) continue
    if (occurrence >= entry.occurrences) throw new ControlError(400, 'too many exceptions for the generated series')
    const day = seedDay(first, (firstDays[index] ?? 0) + occurrence * (entry.daily ? 1 : 7))
    plan.exceptions.push({ series: index, day, hour: entry.hour, cancelled: j % 3 === 0 })
  }
  return plan
}
