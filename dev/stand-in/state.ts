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
