// The convergence suite's machinery, the same for every provider: fast-check generates sequences of
// operations here (renames sent as the web client sends them: its own plans and requests; creates
// and deletions through the client module, as a native app sends them) and at the provider ("another device", through a small per-provider
// port), with the provider answering 503 for a while in between; each sequence runs against the
// whole stack on a freshly connected user, sync settles, and both sides' occurrences over the weeks
// involved are compared (start, end, title). A failure shrinks to a short sequence, printed with its seed.
//
// CONVERGENCE_RUNS sets how many sequences run (CI: each file's default); `npm run convergence` runs
// more; CONVERGENCE_SEED replays one.
import fc from 'fast-check'
import type { Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { waitFor } from '../processes.js'
import { ourOccurrences, type Window } from './occurrences.js'
import { mintEventId } from '../../lib/events/ids.js'
import type { SignedIn } from '../helper.js'
import { onItsWay, primaryCalendarId, type FullStack } from './stack.js'
import { draftOf, planEdit, type EditPlan } from '../../web/src/lib/series-edit.js'
import { frequencyOf, type ApplyTo, type CalendarEvent } from '../../web/src/lib/events.js'
import { sendPlan } from '../web-plans.js'
import { ApiError, CalendarClient } from '../../client/index.js'

export const WINDOW: Window = { from: '2026-11-30T00:00:00Z', to: '2027-01-05T00:00:00Z' }
const FIRST_DAY = Date.parse('2026-12-01T00:00:00Z')
const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000
const WEEK_MS = 7 * DAY_MS
// After the provider answers again, sync has this long to bring both sides together.
const SETTLE_MS = 45_000

interface Body { title: string, startDate: string, endDate: string, timeZone: string, recurrence?: { rule: string[] } }
/** `deleted`: deleted here by the person, so it must stay gone on both sides (nothing at the provider touches it after). */
interface Made { id: string, body: Body, removed: boolean, deleted?: true, titles: string[] }
export interface Model { made: Made[], titles: number, down: boolean }

/**
 * "Another device" at one provider: changes made there without our API, what the provider shows,
 * and a switch that makes the provider answer Sync 503 (the device's own requests keep working).
 * `providerId` is our event's `providerEventId`; a target already gone there is no failure.
 */
export interface Device {
  editTitle: (providerId: string, title: string) => Promise<void>
  moveOccurrence: (providerId: string, originalStart: number, start: number, end: number) => Promise<void>
  cancelOccurrence: (providerId: string, originalStart: number) => Promise<void>
  /** Every occurrence over the window as the provider shows it, as `ourOccurrences` lines. */
  occurrences: () => Promise<string[]>
  fault: (down: boolean) => Promise<void>
  /** What moves sync on while settling, besides time (a refresh for a provider that sends no notifications). */
  nudge: () => Promise<void>
}

export interface Connected { user: SignedIn & { email: string, password: string }, device: Device }

/**
 * The backend, the user, the provider's side, and the calendar the user's new events go to (the
 * connection's primary); `client`: the client module signed in as the user, over HTTP.
 */
export interface Real { app: FastifyInstance, user: SignedIn & { email: string }, device: Device, calendarId: string, client: CalendarClient }

/** A deletion the client module sends; one the backend no longer has (404) is done already. */
async function deleteThroughClient (real: Real, id: string, applyTo?: ApplyTo): Promise<void> {
  try {
    await real.client.deleteEvent(id, applyTo)
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 404) throw error
  }
}

export type Command = fc.AsyncCommand<Model, Real>

/** An instant as iCalendar and Google's instance ids write it (`20261201T150000Z`). */
export function basic (ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z').replaceAll('-', '').replaceAll(':', '')
}

function startOf (made: Made): number {
  return Date.parse(made.body.startDate)
}

/** Our event's provider id once Sync has linked it; while the provider is down it may never come, so no waiting then. */
async function providerIdOf (model: Model, real: Real, id: string): Promise<string | null> {
  let found: string | null = null
  await waitFor(async () => {
    const answer = await real.app.inject({ method: 'GET', url: `/api/event/${id}`, headers: real.user.headers })
    found = answer.statusCode === 200 ? answer.json<{ providerEventId?: string }>().providerEventId ?? null : null
    return found !== null
  }, model.down ? 0 : 20_000)
  return found
}

const live = (model: Readonly<Model>) => model.made.filter((made) => !made.removed)
const liveSeries = (model: Readonly<Model>) => live(model).filter((made) => made.body.recurrence !== undefined)

export class CreateHere implements Command {
  constructor (readonly series: boolean, readonly day: number, readonly hour: number) {}
  check = () => true
  async run (model: Model, real: Real): Promise<void> {
    const start = FIRST_DAY + this.day * DAY_MS + (this.hour + 5) * HOUR_MS
    const body: Body = {
      title: `E${++model.titles}`,
      startDate: new Date(start).toISOString(),
      endDate: new Date(start + HOUR_MS).toISOString(),
      timeZone: 'America/New_York',
      ...(this.series ? { recurrence: { rule: ['RRULE:FREQ=WEEKLY'] } } : {})
    }
    const id = await real.client.saveEvent({ calendarId: real.calendarId, ...body })
    model.made.push({ id, body, removed: false, titles: [body.title] })
  }

  toString = () => `CreateHere(${this.series ? 'weekly' : 'single'}, day ${this.day}, ${this.hour}:00)`
}

/** The event (or occurrence) as the web client read it; null when it is gone. */
async function readHere (real: Real, id: string): Promise<CalendarEvent | null> {
  const answer = await real.app.inject({ method: 'GET', url: `/api/event/${id}`, headers: real.user.headers })
  return answer.statusCode === 200 ? answer.json<CalendarEvent>() : null
}

/** A rename as the web client's dialog sends it (its own plan and requests); the statuses met. */
async function renameHere (real: Real, event: CalendarEvent, title: string, scope: ApplyTo, series: CalendarEvent | null, newId: string): Promise<{ statuses: number[], plan: EditPlan }> {
  const plan = planEdit(event, { ...draftOf(event, frequencyOf((series ?? event).recurrence?.rule)), title }, scope, series, newId)
  return { statuses: await sendPlan(real.app, real.user.headers, plan), plan }
}

/**
 * A rename of the whole event (a series: "all events") as the web client's dialog sends it: its
 * own plan, built from the event as read here, with what other clients changed meanwhile.
 */
export class EditTitleHere implements Command {
  constructor (readonly pick: number) {}
  check = (model: Readonly<Model>) => live(model).length > 0
  async run (model: Model, real: Real): Promise<void> {
    const made = live(model)[this.pick % live(model).length] as Made
    const read = await readHere(real, made.id)
    // A series cut back to nothing by "this and following" is gone here: the person cannot open it.
    if (read === null) {
      made.removed = true
      return
    }
    made.body = { ...made.body, title: `E${++model.titles}` }
    made.titles.push(made.body.title)
    const { statuses } = await renameHere(real, read, made.body.title, 'all', null, mintEventId())
    if (statuses.some((status) => status !== 204)) throw new Error(`the rename answered ${statuses.join(', ')}`)
  }

  toString = () => `EditTitleHere(#${this.pick})`
}

/** One occurrence of a series made here and its series, as the person opens it; null when there is none to open (cut off, cancelled, or the series gone). */
async function openOccurrence (model: Model, real: Real, pick: number, week: number): Promise<{ made: Made, occurrence: CalendarEvent, series: CalendarEvent } | null> {
  const made = liveSeries(model)[pick % liveSeries(model).length] as Made
  const [occurrence, series] = [await readHere(real, `${made.id}_${basic(startOf(made) + week * WEEK_MS)}`), await readHere(real, made.id)]
  return occurrence === null || series === null ? null : { made, occurrence, series }
}

/** "This event": one occurrence renamed, as the web client's dialog sends it. */
class EditOccurrenceHere implements Command {
  constructor (readonly pick: number, readonly week: number) {}
  check = (model: Readonly<Model>) => liveSeries(model).length > 0
  async run (model: Model, real: Real): Promise<void> {
    const opened = await openOccurrence(model, real, this.pick, this.week)
    if (opened === null) return
    const { made, occurrence, series } = opened
    const title = `E${++model.titles}`
    made.titles.push(title)
    const { statuses } = await renameHere(real, occurrence, title, 'this', series, mintEventId())
    if (statuses.some((status) => status !== 204 && status !== 404)) throw new Error(`this event answered ${statuses.join(', ')}`)
  }

  toString = () => `EditOccurrenceHere(#${this.pick}, week ${this.week})`
}

/** "This and following": the series cut at one occurrence, renamed from there, as the web client sends it. */
class EditFollowingHere implements Command {
  constructor (readonly pick: number, readonly week: number) {}
  check = (model: Readonly<Model>) => liveSeries(model).length > 0
  async run (model: Model, real: Real): Promise<void> {
    const opened = await openOccurrence(model, real, this.pick, this.week)
    if (opened === null) return
    const { made, occurrence, series } = opened
    const tail: Made = { id: mintEventId(), body: made.body, removed: false, titles: [`E${++model.titles}`] }
    const { statuses, plan } = await renameHere(real, occurrence, tail.titles[0] as string, 'thisAndFollowing', series, tail.id)
    if (statuses.some((status) => status !== 204)) throw new Error(`this and following answered ${statuses.join(', ')}: nothing may be cut without its tail stored`)
    if (plan.kind === 'split') {
      const { title, startDate, endDate, timeZone, recurrence } = plan.create
      tail.body = { title: title ?? '', startDate, endDate, timeZone: timeZone ?? made.body.timeZone, ...(recurrence?.rule === undefined ? {} : { recurrence: { rule: recurrence.rule } }) }
      model.made.push(tail)
    }
    const cut = await readHere(real, made.id)
    if (cut?.recurrence?.rule !== undefined) made.body = { ...made.body, recurrence: { rule: cut.recurrence.rule } }
    else made.removed = true
  }

  toString = () => `EditFollowingHere(#${this.pick}, week ${this.week})`
}

export class DeleteHere implements Command {
  constructor (readonly pick: number) {}
  check = (model: Readonly<Model>) => live(model).length > 0
  async run (model: Model, real: Real): Promise<void> {
    const made = live(model)[this.pick % live(model).length] as Made
    made.removed = true
    made.deleted = true
    await deleteThroughClient(real, made.id)
  }

  toString = () => `DeleteHere(#${this.pick})`
}

/** "This event" deleted, through the client module: the occurrence stays gone on both sides whatever the series does next. */
class DeleteOccurrenceHere implements Command {
  constructor (readonly pick: number, readonly week: number) {}
  check = (model: Readonly<Model>) => liveSeries(model).length > 0
  async run (model: Model, real: Real): Promise<void> {
    const made = liveSeries(model)[this.pick % liveSeries(model).length] as Made
    await deleteThroughClient(real, `${made.id}_${basic(startOf(made) + this.week * WEEK_MS)}`, 'this')
  }

  toString = () => `DeleteOccurrenceHere(#${this.pick}, week ${this.week})`
}

class ThisAndFollowingHere implements Command {
  constructor (readonly pick: number, readonly week: number) {}
  check = (model: Readonly<Model>) => liveSeries(model).length > 0
  async run (model: Model, real: Real): Promise<void> {
    const made = liveSeries(model)[this.pick % liveSeries(model).length] as Made
    const key = basic(startOf(made) + this.week * WEEK_MS)
    await deleteThroughClient(real, `${made.id}_${key}`, 'thisAndFollowing')
    // The series' rule is the server's now; a later title edit sends it back as read.
    const stored = await real.app.inject({ method: 'GET', url: `/api/event/${made.id}`, headers: real.user.headers })
    if (stored.statusCode === 200) made.body = { ...made.body, recurrence: { rule: stored.json<{ recurrence: { rule: string[] } }>().recurrence.rule } }
    else made.removed = true
  }

  toString = () => `ThisAndFollowingHere(#${this.pick}, week ${this.week})`
}

export class EditTitleThere implements Command {
  constructor (readonly pick: number) {}
  check = (model: Readonly<Model>) => live(model).length > 0
  async run (model: Model, real: Real): Promise<void> {
    const made = live(model)[this.pick % live(model).length] as Made
    const providerId = await providerIdOf(model, real, made.id)
    if (providerId === null) return
    await real.device.editTitle(providerId, `E${++model.titles}`)
  }

  toString = () => `EditTitleThere(#${this.pick})`
}

class MoveOccurrenceThere implements Command {
  constructor (readonly pick: number, readonly week: number, readonly hours: number) {}
  check = (model: Readonly<Model>) => liveSeries(model).length > 0
  async run (model: Model, real: Real): Promise<void> {
    const made = liveSeries(model)[this.pick % liveSeries(model).length] as Made
    const providerId = await providerIdOf(model, real, made.id)
    if (providerId === null) return
    const original = startOf(made) + this.week * WEEK_MS
    const start = original + this.hours * HOUR_MS
    await real.device.moveOccurrence(providerId, original, start, start + HOUR_MS)
  }

  toString = () => `MoveOccurrenceThere(#${this.pick}, week ${this.week}, ${this.hours > 0 ? '+' : ''}${this.hours} h)`
}

export class CancelOccurrenceThere implements Command {
  constructor (readonly pick: number, readonly week: number) {}
  check = (model: Readonly<Model>) => liveSeries(model).length > 0
  async run (model: Model, real: Real): Promise<void> {
    const made = liveSeries(model)[this.pick % liveSeries(model).length] as Made
    const providerId = await providerIdOf(model, real, made.id)
    if (providerId === null) return
    await real.device.cancelOccurrence(providerId, startOf(made) + this.week * WEEK_MS)
  }

  toString = () => `CancelOccurrenceThere(#${this.pick}, week ${this.week})`
}

/** The provider starts answering Sync 503; the operations after it happen during the outage. */
class ProviderDown implements Command {
  check = (model: Readonly<Model>) => !model.down
  async run (model: Model, real: Real): Promise<void> {
    model.down = true
    await real.device.fault(true)
  }

  toString = () => 'ProviderDown()'
}

/** The provider answers again (also done before settling when a sequence ends during an outage). */
class ProviderBack implements Command {
  check = (model: Readonly<Model>) => model.down
  async run (model: Model, real: Real): Promise<void> {
    model.down = false
    await real.device.fault(false)
  }

  toString = () => 'ProviderBack()'
}

const pick = fc.nat({ max: 7 })
const week = fc.integer({ min: 1, max: 4 })

/**
 * Sequences of up to eight operations on both sides, an outage of the provider among them.
 * `occurrenceEdits`: "this event" and "this and following" renames here among them.
 */
function commandsOf (occurrenceEdits: boolean): fc.Arbitrary<Iterable<Command>> {
  return fc.commands<Model, Real, false>([
    fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 6 }), fc.integer({ min: 8, max: 16 })).map(([series, day, hour]) => new CreateHere(series, day, hour)),
    pick.map((index) => new EditTitleHere(index)),
    ...(occurrenceEdits
      ? [fc.tuple(pick, week).map(([index, w]): Command => new EditOccurrenceHere(index, w)), fc.tuple(pick, week).map(([index, w]): Command => new EditFollowingHere(index, w))]
      : []),
    ...OTHER_COMMANDS
  ], { maxCommands: 8 })
}

const OTHER_COMMANDS = [
  pick.map((index) => new DeleteHere(index)),
  fc.tuple(pick, week).map(([index, w]) => new DeleteOccurrenceHere(index, w)),
  fc.tuple(pick, week).map(([index, w]) => new ThisAndFollowingHere(index, w)),
  pick.map((index) => new EditTitleThere(index)),
  fc.tuple(pick, week, fc.constantFrom(-2, -1, 1, 2, 26)).map(([index, w, hours]) => new MoveOccurrenceThere(index, w, hours)),
  fc.tuple(pick, week).map(([index, w]) => new CancelOccurrenceThere(index, w)),
  fc.constant(new ProviderDown()),
  fc.constant(new ProviderBack())
]

export interface SuiteOptions {
  provider: string
  /** A new user of the backend, connected to a new account at the provider, its connection healthy. */
  connect: (label: string) => Promise<Connected>
  /** The whole stack: its backend is where changes are made here, its outbox and Sync's jobs say what is on its way. */
  stack: FullStack
  /** Failures the generator found, shrunk, kept as plain sequences that run first. */
  found: Command[][]
  /** Generated sequences to run (runsOf: CONVERGENCE_RUNS, else the file's default). */
  defaultRuns: number
  /** Whether the generated sequences rename occurrences here ("this event", "this and following"). */
  occurrenceEdits: boolean
}

export function runsOf (defaultRuns: number): number {
  return Number(process.env['CONVERGENCE_RUNS'] ?? defaultRuns)
}

/**
 * A new user's sign-in, asked again after the wait a 429 names: a long run (CONVERGENCE_RUNS)
 * signs in more users a minute from one address than the limit lets through.
 */
async function clientAfterRateLimit<T> (act: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await act()
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 429 || attempt === 4) throw error
      const seconds = Number(/try again in (\d+) seconds/.exec(error.message)?.[1] ?? 20)
      await new Promise((resolve) => setTimeout(resolve, Math.min(seconds, 60) * 1000))
    }
  }
}

/** Runs the kept sequences, then the generated ones, each on a new user; fails with the two sides when they differ. */
export async function convergenceSuite (t: Test, options: SuiteOptions): Promise<void> {
  const runs = options.defaultRuns
  const app = options.stack.backend.app
  const seed = process.env['CONVERGENCE_SEED'] === undefined ? undefined : Number(process.env['CONVERGENCE_SEED'])
  const began = Date.now()
  let sequences = 0
  let operations = 0
  let label = 0
  const converges = async (sequence: Iterable<Command>): Promise<void> => {
    sequences++
    const { user, device } = await options.connect(`conv-${options.provider}-${++label}`)
    const client = new CalendarClient({ apiUrl: `${options.stack.backendOrigin}/api` })
    const signedIn = await clientAfterRateLimit(async () => await client.signIn({ email: user.email, password: user.password }))
    if (signedIn.status !== 'OK') throw new Error(`the client module could not sign in: ${signedIn.status}`)
    const real: Real = { app, user, device, calendarId: await primaryCalendarId(app, user.headers), client }
    const model: Model = { made: [], titles: 0, down: false }
    const ran: string[] = []
    for (const command of sequence) {
      if (!command.check(model)) continue
      operations++
      ran.push(command.toString())
      await command.run(model, real)
    }
    if (model.down) await new ProviderBack().run(model, real)
    // A write waiting for the provider goes at once on a refresh, as a person would ask for it.
    await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })
    const ours = async () => await ourOccurrences(app, user.headers, WINDOW)
    // Converged is the two sides alike once nothing is on its way between them: while a write is
    // under way they can be alike for a moment (a copy read back before the write's record names it
    // ours, on both sides until the deletion behind it arrives).
    const settled = await waitFor(async () => {
      await device.nudge()
      // A nudge can itself start a read (CalDAV's refresh): the sides are compared once it is done.
      if (!await waitFor(async () => (await onItsWay(options.stack, user.userId)).length === 0, 10_000)) return false
      return JSON.stringify(await ours()) === JSON.stringify(await device.occurrences())
    }, SETTLE_MS)
    if (!settled) {
      const pending = await onItsWay(options.stack, user.userId)
      const state = pending.length === 0 ? 'differ' : `still have changes on their way (${pending.join('; ')})`
      throw new Error(`the two sides ${state} after ${ran.join(', ')}\nhere:  ${(await ours()).join('\n       ')}\nthere: ${(await device.occurrences()).join('\n       ')}`)
    }
    // Equal sides could still be a change lost on both: an event deleted here must not come back.
    for (const made of model.made.filter((entry) => entry.deleted === true)) {
      const read = await app.inject({ method: 'GET', url: `/api/event/${made.id}`, headers: user.headers })
      const back = (await ours()).filter((entry) => made.titles.some((title) => entry.endsWith(`|${title}`)))
      if (read.statusCode !== 404 || back.length > 0) throw new Error(`an event deleted here is back after ${ran.join(', ')}: GET answered ${read.statusCode}, read ${back.join(', ') || 'nothing'} (${made.titles.join(', ')})`)
    }
    t.comment(`${ran.join(', ')}: ${(await ours()).length} occurrences on both sides`)
    if (process.env['CONVERGENCE_SHOW'] !== undefined) t.comment((await ours()).join('\n'))
  }
  for (const sequence of options.found) await converges(sequence)
  t.pass(`${options.found.length} kept sequences converged`)
  await fc.assert(fc.asyncProperty(commandsOf(options.occurrenceEdits), async (sequence) => { await converges(sequence) }), { numRuns: runs, ...(seed === undefined ? {} : { seed }), endOnFailure: runs <= 4 })
  t.pass(`${sequences} sequences, ${operations} operations converged`)
  t.comment(`convergence: ${sequences} sequences, ${operations} operations, provider ${options.provider}, ${Math.round((Date.now() - began) / 1000)} s`)
}

/** Every operation kind but deletions, the provider down in the middle, so even a short run has them all. */
export const EVERY_KIND: Command[] = [
  new CreateHere(true, 1, 9), new CreateHere(false, 2, 10), new EditTitleThere(0), new MoveOccurrenceThere(0, 1, 2),
  new ProviderDown(), new EditTitleHere(0), new ThisAndFollowingHere(0, 3), new EditTitleHere(1), new ProviderBack(), new CancelOccurrenceThere(0, 2)
]

/** EVERY_KIND, then one occurrence renamed here ("this event") and the series renamed from another on ("this and following"). */
export const EVERY_KIND_WITH_OCCURRENCE_EDITS: Command[] = [...EVERY_KIND, new EditOccurrenceHere(0, 1), new EditFollowingHere(0, 2)]

/** Deletions here beside a change at the provider (at Google a series deleted here came back here, gone at Google). */
export const DELETIONS: Command[] = [new CreateHere(true, 0, 14), new CreateHere(false, 3, 8), new EditTitleThere(1), new DeleteHere(0)]

/**
 * Occurrences deleted here ("this event") and then whole-series writes: a rename, and a "this and
 * following" cut after the first deleted one. At a CalDAV server both writes once brought the
 * deleted occurrence back (the master rewritten without the EXDATE the deletion had become).
 */
export const OCCURRENCE_DELETIONS: Command[] = [
  new CreateHere(true, 0, 14), new DeleteOccurrenceHere(0, 1), new EditTitleHere(0), new DeleteOccurrenceHere(0, 3), new ThisAndFollowingHere(0, 2)
]

/**
 * Found and shrunk, each of them failing once, at one provider or more, now kept for all three:
 * deletions here racing our own earlier writes (an insert answered or read back after the
 * deletion, stamped later than it), with and without the provider away.
 */
export const DELETION_RACES: Command[][] = [
  // Made and deleted here while the provider is away: Graph's delta read of our insert, without our
  // id, came back as a new event.
  [new ProviderDown(), new CreateHere(false, 2, 10), new DeleteHere(0), new ProviderBack()],
  // A single event at the provider, deleted here just before the provider goes down.
  [new CreateHere(false, 2, 10), new EditTitleThere(0), new DeleteHere(0), new ProviderDown(), new ProviderBack()],
  // Google's kept race at Microsoft: an occurrence cancelled there, the series deleted here; the
  // series (its first title) is back here for good, gone at the provider.
  [new CreateHere(true, 0, 14), new CreateHere(false, 3, 8), new EditTitleThere(1), new DeleteHere(1), new CancelOccurrenceThere(0, 1), new DeleteHere(0)],
  // Without any outage: a series renamed here and deleted here at once came back on both sides
  // (the rename coalesced into the deletion; our insert read back, stamped after the deletion).
  [new CreateHere(true, 0, 14), new EditTitleHere(0), new DeleteHere(0)],
  // A series renamed there, then deleted here, came back here under that title, gone at Google.
  [new CreateHere(true, 0, 14), new EditTitleThere(0), new DeleteHere(0)]
]

/**
 * Found and shrunk (CalDAV, seed 932739219): one occurrence renamed here before its series reached
 * the provider; the rename went there as an event of its own, beside the series' occurrence.
 */
export const EDIT_RACES: Command[][] = [
  [new CreateHere(true, 0, 8), new EditOccurrenceHere(0, 1)],
  [new CreateHere(true, 0, 8), new EditFollowingHere(0, 1), new EditOccurrenceHere(1, 1)],
  // Found at Google (seed -940592739): an occurrence renamed here, later cancelled there. Google
  // dates no deletion, and the rename here won against it for good: the occurrence stayed here,
  // under a title neither side held any more.
  [new CreateHere(true, 2, 16), new EditOccurrenceHere(2, 4), new CreateHere(false, 3, 14), new EditTitleThere(4), new EditTitleHere(6), new CancelOccurrenceThere(6, 4)]
]
