// A small command-line client on top of the client module: `npm run cli -- <command> [options]`.
// Its session is kept in a file under the user's configuration folder (0600); see client/README.md.
import { createInterface } from 'node:readline'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import envPaths from 'env-paths'
import type { EventApplyTo, EventChangeInput } from '../schemas/event.js'
import { CalendarClient, type AuthResult } from './calendar-client.js'
import { ApiError, SessionEndedError, UnavailableError } from './errors.js'
import { FileTokenStore } from './file-token-store.js'

const USAGE = `Usage: npm run cli -- <command> [options]

  signup --name NAME --email EMAIL     create an account and sign in
  signin --email EMAIL                 sign in
  signout                              end the session
  whoami                               the signed-in user's profile
  list [--from DATE] [--to DATE]       events of a range (default: the next 7 days; --json for JSON)
  add --title TITLE --start DATE --end DATE [--all-day] [--time-zone ZONE] [--description TEXT]
                                       add an event; prints its id
  delete ID [--apply-to this|thisAndFollowing|all]
                                       delete an event, or occurrences of a series
  watch                                print every message of the event stream, one JSON line each

The password is read from CALENDAR_PASSWORD, else from the first line of standard input.
DATE: YYYY-MM-DD (midnight UTC; all-day events take it as it is) or RFC 3339 with an offset.
--api URL (or CALENDAR_API_URL) names the backend; default http://localhost:3000/api, as npm start runs it.
The session is kept in CALENDAR_CONFIG_DIR, default the user's configuration folder.`

class UsageError extends Error {}

const options = {
  api: { type: 'string' },
  name: { type: 'string' },
  email: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  title: { type: 'string' },
  start: { type: 'string' },
  end: { type: 'string' },
  'all-day': { type: 'boolean' },
  'time-zone': { type: 'string' },
  description: { type: 'string' },
  'apply-to': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' }
} as const

type Values = ReturnType<typeof parseArgs<{ options: typeof options, allowPositionals: true }>>['values']

function required (values: Values, name: 'name' | 'email' | 'title' | 'start' | 'end'): string {
  const value = values[name]
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`)
  return value
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/

/** A range bound: a date means its midnight in UTC. */
function instant (value: string): string {
  const text = DATE_ONLY.test(value) ? `${value}T00:00:00Z` : value
  if (Number.isNaN(Date.parse(text))) throw new UsageError(`not a date: ${value}`)
  return new Date(text).toISOString()
}

async function password (): Promise<string> {
  const fromEnvironment = process.env.CALENDAR_PASSWORD
  if (fromEnvironment !== undefined && fromEnvironment !== '') return fromEnvironment
  if (process.stdin.isTTY) process.stderr.write('Password: ')
  const lines = createInterface({ input: process.stdin })
  const first = await lines[Symbol.asyncIterator]().next()
  lines.close()
  if (first.done === true) throw new UsageError('no password: set CALENDAR_PASSWORD or give it on standard input')
  return first.value as string
}

function authOutcome (result: AuthResult, done: string): string {
  switch (result.status) {
    case 'OK':
      return `${done} (user ${result.userId})`
    case 'WRONG_CREDENTIALS_ERROR':
      throw new Error('wrong email or password')
    case 'FIELD_ERROR':
      throw new Error(result.fields.map((field) => `${field.id}: ${field.error}`).join('; '))
    case 'NOT_ALLOWED':
      throw new Error(`not allowed: ${result.reason}`)
  }
}

function print (line: string): void {
  process.stdout.write(`${line}\n`)
}

async function watch (client: CalendarClient): Promise<number> {
  return await new Promise((resolve) => {
    const stream = client.stream({
      onMessage: (message) => { print(JSON.stringify(message)) },
      onStatus: (status) => {
        if (status.state === 'open') process.stderr.write(`stream open (connection ${status.connection}${status.renewal ? ', renewed' : ''})\n`)
        if (status.state === 'retrying') process.stderr.write(`stream ${status.reason}${status.error === undefined ? '' : ` (${status.error.message})`}; again in ${status.inMs} ms\n`)
        if (status.state === 'closed' && status.reason === 'sessionEnded') {
          process.stderr.write('the session has ended; sign in again\n')
          resolve(1)
        }
      }
    })
    const stop = (): void => {
      stream.close()
      resolve(0)
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
}

async function run (argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true })
  const [command, ...rest] = positionals
  if (values.help === true || command === undefined) {
    print(USAGE)
    return command === undefined && values.help !== true ? 2 : 0
  }
  const apiUrl = (values.api ?? process.env.CALENDAR_API_URL ?? 'http://localhost:3000/api').replace(/\/+$/, '')
  const configDir = process.env.CALENDAR_CONFIG_DIR ?? envPaths('calendar-service', { suffix: '' }).config
  const client = new CalendarClient({ apiUrl, tokenStore: new FileTokenStore(join(configDir, 'tokens.json'), apiUrl) })

  switch (command) {
    case 'signup':
      print(authOutcome(await client.signUp({ name: required(values, 'name'), email: required(values, 'email'), password: await password() }), 'signed up'))
      return 0
    case 'signin':
      print(authOutcome(await client.signIn({ email: required(values, 'email'), password: await password() }), 'signed in'))
      return 0
    case 'signout':
      await client.signOut()
      print('signed out')
      return 0
    case 'whoami': {
      const profile = await client.profile()
      print(`${profile.email}${profile.name === undefined ? '' : ` (${profile.name})`} ${profile.id}`)
      return 0
    }
    case 'list': {
      const start = instant(values.from ?? new Date().toISOString().slice(0, 10))
      const end = values.to === undefined ? new Date(Date.parse(start) + 7 * 86_400_000).toISOString() : instant(values.to)
      const events = await client.listEvents({ start, end })
      if (values.json === true) print(JSON.stringify(events))
      else for (const event of events) print(`${event.startDate}  ${event.endDate}  ${event.title}  ${event._id}`)
      return 0
    }
    case 'add': {
      const allDay = values['all-day'] === true
      const change: EventChangeInput = {
        title: required(values, 'title'),
        startDate: required(values, 'start'),
        endDate: required(values, 'end'),
        isAllDay: allDay,
        ...(values['time-zone'] === undefined ? {} : { timeZone: values['time-zone'] }),
        ...(values.description === undefined ? {} : { description: values.description })
      }
      print(await client.saveEvent(change))
      return 0
    }
    case 'delete': {
      const [id] = rest
      if (id === undefined) throw new UsageError('delete needs the event id')
      const applyTo = values['apply-to']
      if (applyTo !== undefined && !['this', 'thisAndFollowing', 'all'].includes(applyTo)) throw new UsageError('--apply-to is this, thisAndFollowing or all')
      await client.deleteEvent(id, applyTo as EventApplyTo | undefined)
      print('deleted')
      return 0
    }
    case 'watch':
      return await watch(client)
    default:
      throw new UsageError(`unknown command: ${command}`)
  }
}

function explain (error: unknown): { message: string, status: number } {
  if (error instanceof UsageError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
    return { message: `${error.message}\n\n${USAGE}`, status: 2 }
  }
  if (error instanceof SessionEndedError) return { message: error.reason === 'notSignedIn' ? 'not signed in: run signin first' : error.message, status: 1 }
  if (error instanceof UnavailableError) {
    const wait = error.retryAfterMs === null ? '' : ` (try again in ${Math.ceil(error.retryAfterMs / 1000)} s)`
    return { message: `unavailable: ${error.message}${wait}`, status: 1 }
  }
  if (error instanceof ApiError) return { message: `refused (${error.status}${error.code === undefined ? '' : ` ${error.code}`}): ${error.message}`, status: 1 }
  return { message: error instanceof Error ? error.message : String(error), status: 1 }
}

run(process.argv.slice(2)).then((status) => {
  process.exitCode = status
}, (error: unknown) => {
  const { message, status } = explain(error)
  process.stderr.write(`${message}\n`)
  process.exitCode = status
})
