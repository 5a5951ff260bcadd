// Google's Calendar API client over the adapters' buffered transport (sync/providers/buffered-fetch.ts,
// gaxios' fetch implementation in the Google adapter) against the same client over gaxios' own
// default fetch: the CPU time of reading a 10,000-event calendar (200 series, 500 exceptions) page
// by page (2,500 a page, as the import reads it) from the Google stand-in, rounds interleaved.
// Prints the ratio buffered / default of the median CPU times (below 1: the buffered transport is
// the cheaper). CPU time rather than wall time, so other work on the machine weighs less.
import { calendar as googleCalendar } from '@googleapis/calendar'
import { OAuth2Client } from 'google-auth-library'
import { startGoogle } from '../dev/google/index.js'
import { googleFetch } from '../sync/providers/buffered-fetch.js'

const CLIENT = { clientId: 'bench-transport.apps.googleusercontent.com', clientSecret: 'GOCSPX-bench-transport' }
const EMAIL = 'transport@example.com'
const REDIRECT = 'http://127.0.0.1:9/callback'
const ROUNDS = 5

const google = await startGoogle({ clients: [{ ...CLIENT, redirectUris: [REDIRECT] }], accounts: [{ email: EMAIL }], notificationRetries: 0 })
// The stand-in's seeding is timed here, not in its tests: a 10,000-event calendar must seed in a
// fraction of one client read of it, or every import test pays for it.
const seedCpuBefore = process.cpuUsage()
google.control.seed(EMAIL, { generate: { singles: 9300, series: 200, exceptions: 500, days: 365 } })
const seedCpu = process.cpuUsage(seedCpuBefore)
const seedCpuMs = (seedCpu.user + seedCpu.system) / 1000

/** The Calendar API for the account, its token obtained the way any client does (consent, code exchange). */
async function calendarApi (buffered: boolean): Promise<ReturnType<typeof googleCalendar>> {
  const oauth = new OAuth2Client({
    ...CLIENT,
    redirectUri: REDIRECT,
    endpoints: { oauth2AuthBaseUrl: `${google.url}/o/oauth2/v2/auth`, oauth2TokenUrl: `${google.url}/token` },
    ...(buffered ? { transporterOptions: { fetchImplementation: googleFetch } } : {})
  })
  const consent = new URL(oauth.generateAuthUrl({ access_type: 'offline', scope: ['https://www.googleapis.com/auth/calendar'], login_hint: EMAIL }))
  consent.searchParams.set('approve', '1')
  const code = new URL((await fetch(consent, { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get('code') ?? ''
  oauth.setCredentials((await oauth.getToken(code)).tokens)
  return googleCalendar({ version: 'v3', rootUrl: google.rootUrl, auth: oauth, timeout: 30_000, retry: false })
}

/** CPU milliseconds of reading every page once. */
async function readAll (api: ReturnType<typeof googleCalendar>): Promise<number> {
  const before = process.cpuUsage()
  let pageToken: string | undefined
  let read = 0
  do {
    const { data } = await api.events.list({ calendarId: EMAIL, maxResults: 2500, singleEvents: false, ...(pageToken === undefined ? {} : { pageToken }) })
    read += data.items?.length ?? 0
    pageToken = data.nextPageToken ?? undefined
  } while (pageToken !== undefined)
  if (read !== 10_000) throw new Error(`read ${read} events`)
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
const apis = { default: await calendarApi(false), buffered: await calendarApi(true) }
const cpu: Record<keyof typeof apis, number[]> = { default: [], buffered: [] }
// One unmeasured read each warms both paths up.
await readAll(apis.default)
await readAll(apis.buffered)
for (let round = 0; round < ROUNDS; round++) {
  cpu.default.push(await readAll(apis.default))
  cpu.buffered.push(await readAll(apis.buffered))
}
console.log(`google-transport: reading 10,000 events in pages of 2,500, CPU median ${median(cpu.buffered).toFixed(0)} ms buffered, ${median(cpu.default).toFixed(0)} ms gaxios' default fetch, ratio ${(median(cpu.buffered) / median(cpu.default)).toFixed(2)} (below 1: the buffered transport is the cheaper)`)
await google.close()
console.log(`google-transport: seeding the stand-in with those 10,000 events, CPU ${seedCpuMs.toFixed(0)} ms, ratio ${(seedCpuMs / median(cpu.default)).toFixed(2)} against one read with gaxios' default fetch`)
