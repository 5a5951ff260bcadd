// How long each class of request takes to answer while the database hangs (its process stopped
// with SIGSTOP: sockets open, nothing answers), against the same requests with the database up,
// measured in the same run. Target: every request answers (503 with Retry-After, health 500)
// within about the per-call deadline (DATABASE_CALL_DEADLINE_MS, 2.5 s) plus the session core's
// share, never on the driver's own socket timeouts (12 s measured for the profile before).
// test/backend/database-faults.test.ts asserts what is answered; the times live here.
import { startBenchBackend } from './backend-process.js'
import { printHungAnswers, type HungCase } from './hung-answers.js'

const { backend, database, user, close } = await startBenchBackend('calendar_hung_database')
const email = 'hung-bench@example.com'
const headers = await user(email)
const event = { title: 'Standup', startDate: '2026-05-04T09:00:00Z', endDate: '2026-05-04T09:15:00Z', timeZone: 'UTC' }
let made = 0
const nextId = () => (++made).toString(16).padStart(24, '0')
const signIn = { method: 'POST', url: '/api/auth/signin', headers: { 'sx-auth-mode': 'header' }, payload: { formFields: [{ id: 'email', value: email }, { id: 'password', value: 'bench password 1' }] } } as const

const cases: HungCase[] = [
  ['health', () => ({ method: 'GET', url: '/api/health' })],
  ['profile', () => ({ method: 'GET', url: '/api/user/profile', headers })],
  ['event write', () => ({ method: 'POST', url: '/api/event', headers, payload: { ...event, _id: nextId() } })],
  ['range read', () => ({ method: 'GET', url: '/api/event?start=2026-05-04T00:00:00Z&end=2026-05-05T00:00:00Z', headers })],
  ['sign-in', () => signIn]
]

try {
  await printHungAnswers('hung database', cases, async (request) => await backend.inject(request), database)
} finally {
  await close()
}
