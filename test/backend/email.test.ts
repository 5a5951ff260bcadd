import { randomBytes } from 'node:crypto'
import { metricValue, parseMetrics } from '../metrics-text.js'
import { test, type Test } from 'tap'
import { ObjectId } from 'mongodb'
import { buildApp, freePort, listen, signIn, signUp, startDependencies, uniqueEmail, verifyEmail, type BuiltApp, type Dependencies } from '../helper.js'
import { waitFor } from '../processes.js'
import { startMailCatcher, type CaughtMail, type MailCatcher } from '../../dev/mail/index.js'
import { signResendWebhook } from '../../lib/email-vendor.js'
import { EMAIL_SEND_SPACING_MS, type EmailOptions } from '../../services/email.js'
import { EMAIL_LEASE_MS, type EmailSendDocument } from '../../stores/email.js'
import type { EmailConfig } from '../../schemas/config.js'

// The email block end to end: sign-up enrolls, the poller sends through Resend's API (the mail
// catcher's stand-in of it), the links in the mail work, and the vendor's webhooks stop the sequence.

const DAY = 86_400_000
const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('base64')}`
const API_KEY = `re_${randomBytes(12).toString('hex')}`

/** The poller's clock: it stands still unless moved; `catchUp` brings it to the wall clock (after sign-ups, which use it). */
interface Clock { now: number, advance: (ms: number) => void, catchUp: () => void }
function clock (): Clock {
  const state = {
    now: Date.now(),
    advance (ms: number) { state.now += ms },
    catchUp () { state.now = Math.max(state.now, Date.now()) + 1 }
  }
  return state
}

interface EmailApp extends BuiltApp {
  sends: () => Promise<EmailSendDocument[]>
  analytics: (name: string) => Array<Record<string, unknown>>
}

async function emailApp (t: Test, deps: Dependencies, setup: { database: string, email?: Partial<EmailConfig>, catcher?: MailCatcher, clock?: Clock, options?: EmailOptions }): Promise<EmailApp> {
  const email = {
    provider: 'mailer',
    apiKey: API_KEY,
    from: 'Calendar <calendar@example.com>',
    webhookSecret: WEBHOOK_SECRET,
    unsubscribeSecret: 'unsubscribe-secret-one',
    ...(setup.catcher === undefined ? {} : { apiBase: setup.catcher.url }),
    ...setup.email
  }
  const time = setup.clock
  const built = await buildApp(t, deps, { apiDatabase: setup.database, extra: { email } }, undefined, undefined, {
    email: { poll: false, pause: async () => {}, ...(time === undefined ? {} : { now: () => new Date(time.now) }), ...setup.options }
  })
  return {
    ...built,
    sends: async () => await built.app.mongo.db.collection<EmailSendDocument>('emailSends').find({}).sort({ _id: 1 }).toArray(),
    analytics: (name) => built.log.lines().filter((line) => line['analyticsEvent'] === name)
  }
}

function database (): string {
  return `email_${randomBytes(4).toString('hex')}`
}

function apiMails (catcher: MailCatcher, to?: string): CaughtMail[] {
  return catcher.messages().filter((mail) => mail.source === 'api' && (to === undefined || mail.envelope.to.includes(to)))
}

/** The unsubscribe link of a mail as the app would be asked for it: path and query of the link. */
function pathOf (link: string): string {
  const url = new URL(link)
  return url.pathname + url.search
}

async function postWebhook (app: BuiltApp['app'], body: unknown, options: { id?: string, at?: Date, secret?: string } = {}) {
  const raw = JSON.stringify(body)
  const headers = signResendWebhook(options.secret ?? WEBHOOK_SECRET, options.id ?? `msg_${randomBytes(8).toString('hex')}`, options.at ?? new Date(), raw)
  return await app.inject({ method: 'POST', url: '/api/email/webhooks/resend', headers: { ...headers, 'content-type': 'application/json' }, payload: raw })
}

test('email block', async (t) => {
  const deps = await startDependencies(t)
  const catcher = await startMailCatcher({ resend: { apiKey: API_KEY } })
  t.teardown(() => catcher.close())

  await t.test('email off: no enrollment, no routes', async (t) => {
    const { app } = await buildApp(t, deps)
    t.equal(app.email, null)
    const user = await signUp(app, { email: uniqueEmail('off'), password: 'pw-for-off-1' })
    t.equal(await app.mongo.db.collection('emailSends').countDocuments({}), 0, 'no rows')
    const record = await app.mongo.db.collection('users').findOne({ _id: new ObjectId(user.userId) })
    t.notOk(record?.['emailEnrollmentPending'], 'no enrollment mark')
    t.equal((await app.inject({ method: 'GET', url: '/api/email/unsubscribe?token=x' })).statusCode, 404)
    t.equal((await app.inject({ method: 'POST', url: '/api/email/unsubscribe?token=x', payload: { 'List-Unsubscribe': 'One-Click' } })).statusCode, 404)
    t.equal((await app.inject({ method: 'POST', url: '/api/email/webhooks/resend', payload: {} })).statusCode, 404)
  })

  await t.test('a password sign-up is enrolled once; the welcome mail has both parts, both headers and a working link', async (t) => {
    const time = clock()
    const pauses: number[] = []
    const emailApp1 = await emailApp(t, deps, { database: database(), catcher, clock: time, options: { pause: async (ms) => { pauses.push(ms) } } })
    const { app } = emailApp1
    const address = uniqueEmail('welcome')
    const user = await signUp(app, { email: address, password: 'pw-for-welcome-1', name: 'Ada' })
    const rows = await emailApp1.sends()
    t.same(rows.map((row) => row._id), ['connect-calendar', 'booking', 'shortcuts', 'welcome'].map((step) => `${user.userId}:${step}`).sort())
    const signedUpAt = (await app.users.findById(user.userId))!.signedUpAt.getTime()
    t.same(Object.fromEntries(rows.map((row) => [row.step, (row.dueAt.getTime() - signedUpAt) / DAY])), { welcome: 0, shortcuts: 2, 'connect-calendar': 5, booking: 9 })
    t.notOk((await app.users.findById(user.userId))?.emailEnrollmentPending, 'the mark is cleared once enrolled')

    // A second enrollment (a sweep racing the sign-up) changes nothing.
    await app.email!.enroll({ _id: new ObjectId(user.userId), signedUpAt: new Date(signedUpAt) })
    t.equal((await emailApp1.sends()).length, 4)

    // Ada proves her address; the name she chose is mailed only then.
    await verifyEmail(user.userId, address)
    await signIn(app, { email: address, password: 'pw-for-welcome-1' })

    // Two more sign-ups, so the first tick has three welcome mails to pace.
    const unproven = uniqueEmail('pacing')
    await signUp(app, { email: unproven, password: 'pw-for-pacing-1', name: 'Your account is suspended, see http://evil.example' })
    await signUp(app, { email: uniqueEmail('pacing'), password: 'pw-for-pacing-2' })
    time.catchUp()
    const report = await app.email!.tick()
    t.equal(report.sent, 3, 'only the welcome mails are due')
    const gauges = parseMetrics(await app.metrics.metrics())
    t.ok((metricValue(gauges, 'email_sends', { state: 'sent' }) ?? 0) >= 3, 'the operator\'s email_sends gauge counts them (docs/operations.md)')
    t.equal(metricValue(gauges, 'email_sends', { state: 'stale' }), 0, 'every state shown, 0 where none')
    t.same(pauses, [EMAIL_SEND_SPACING_MS, EMAIL_SEND_SPACING_MS], 'a pause between two sends')
    const mails = apiMails(catcher, address)
    t.equal(mails.length, 1)
    const mail = mails[0]!
    t.equal(mail.subject, 'Welcome to Calendar')
    t.match(mail.html, /<a href="http:\/\/localhost:3000\/api\/email\/unsubscribe\?token=/)
    t.match(mail.text, /^Hello Ada,/, 'a verified address: greeted by name')
    const strangers = apiMails(catcher, unproven)[0]
    t.match(strangers?.text, /^Hello,\n/, 'an address nobody has proven: the name someone typed is not in the mail')
    t.notMatch(`${strangers?.text ?? ''}${strangers?.html ?? ''}`, /evil|suspended/)
    const link = mail.headers?.['List-Unsubscribe']?.replace(/^<|>$/g, '') ?? ''
    t.match(link, /^http:\/\/localhost:3000\/api\/email\/unsubscribe\?token=[0-9a-f]{24}\.[A-Za-z0-9_-]+$/, 'one /api, never /api/api')
    t.equal(mail.headers?.['List-Unsubscribe-Post'], 'List-Unsubscribe=One-Click')
    t.ok(mail.links.includes(link), 'the same link is in the body')
    t.same(mail.tags, { user_id: user.userId, step: 'welcome' })
    const welcome = (await emailApp1.sends()).find((row) => row.step === 'welcome')!
    t.equal(welcome.state, 'sent')
    t.equal(welcome.vendorMessageId, mail.id, 'the vendor\'s id is kept for its webhooks')
    t.equal(emailApp1.analytics('email_sent').length, 3)
    t.same(emailApp1.analytics('email_heartbeat').at(-1)?.['queueDepth'], 9)

    const document = app.swagger() as unknown as { paths: Record<string, Record<string, { description?: string }>> }
    for (const [path, method] of [['/api/email/unsubscribe', 'get'], ['/api/email/unsubscribe', 'post'], ['/api/email/webhooks/resend', 'post']] as const) {
      t.ok(document.paths[path]?.[method]?.description, `${method.toUpperCase()} ${path} is in the OpenAPI document`)
    }

    // The link as a person follows it: a confirm page that changes nothing.
    const page = await app.inject({ method: 'GET', url: pathOf(link) })
    t.equal(page.statusCode, 200)
    t.match(page.headers['content-type'], /text\/html/)
    t.match(page.body, /<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click">/)
    t.match(page.headers['content-security-policy'], /form-action 'self'/)
    t.equal((await emailApp1.sends()).filter((row) => row.state === 'queued').length, 9, 'opening the link unsubscribes nobody')

    // Nine days on, with no tick in between (the service was down): the last step goes out, the
    // older two are stale rather than sent days late.
    time.advance(9 * DAY + 60_000)
    const later = await app.email!.tick()
    t.equal(later.sent, 3, 'each user\'s booking step')
    const states = Object.fromEntries((await emailApp1.sends()).filter((row) => row.userId === user.userId).map((row) => [row.step, row.state]))
    t.same(states, { welcome: 'sent', shortcuts: 'stale', 'connect-calendar': 'stale', booking: 'sent' })
  })

  await t.test('a provider sign-up is enrolled too, and the calendar step is skipped for a user with a provider calendar', async (t) => {
    const time = clock()
    const built = await emailApp(t, deps, { database: database(), catcher, clock: time })
    const { app } = built
    const userId = new ObjectId().toHexString()
    // The write provider sign-in makes (plugins/app/identity.ts adoptProviderLogin).
    await app.users.recordAuthentication(userId, { email: uniqueEmail('google'), name: 'G', now: new Date(time.now), emailVerified: true, provider: { provider: 'google', accountId: `g-${userId}` } })
    t.equal((await built.sends()).length, 4, 'enrolled at the provider sign-up')
    await app.users.recordProviderConnection(userId, 'connection-1')
    time.advance(5 * DAY + 1000)
    await app.email!.tick()
    const step = (await built.sends()).find((row) => row.step === 'connect-calendar')
    t.equal(step?.state, 'skipped')
    t.equal(step?.reason, 'calendar connected')
  })

  await t.test('a crash between creating the user and enrolling is repaired by the sweep, once', async (t) => {
    const built = await emailApp(t, deps, { database: database(), catcher })
    const { app } = built
    // What the sign-up's one write leaves when the process stops right after it.
    const userId = new ObjectId()
    await app.mongo.db.collection('users').insertOne({ _id: userId, email: uniqueEmail('crash'), signedUpAt: new Date(), lastLoggedInAt: new Date(), emailVerified: false, emailEnrollmentPending: true })
    const report = await app.email!.tick()
    t.equal(report.enrolled, 1)
    t.equal(report.sent, 1, 'and its welcome mail goes out')
    t.equal((await built.sends()).length, 4)
    t.notOk((await app.users.findById(userId.toHexString()))?.emailEnrollmentPending)
    t.equal((await app.email!.tick()).enrolled, 0, 'never twice')
    t.equal((await built.sends()).length, 4)
    // Accounts from before the block was on are not backfilled.
    await app.mongo.db.collection('users').insertOne({ _id: new ObjectId(), email: uniqueEmail('old'), signedUpAt: new Date(), lastLoggedInAt: new Date() })
    t.equal((await app.email!.tick()).enrolled, 0)
  })

  await t.test('two backend processes share the queue: every mail is sent once', async (t) => {
    const name = database()
    const first = await emailApp(t, deps, { database: name, catcher })
    const second = await emailApp(t, deps, { database: name, catcher })
    const addresses: string[] = []
    for (let index = 0; index < 6; index++) {
      const address = uniqueEmail('shared')
      addresses.push(address)
      await signUp(index % 2 === 0 ? first.app : second.app, { email: address, password: 'pw-for-shared-1' })
    }
    const [a, b] = await Promise.all([first.app.email!.tick(), second.app.email!.tick()])
    t.equal(a.sent + b.sent, 6)
    for (const address of addresses) t.equal(apiMails(catcher, address).length, 1, `${address}: one mail`)
    t.equal((await first.sends()).filter((row) => row.state === 'sent').length, 6)
  })

  await t.test('a crash between claim and send: the next claim sends under the same key, and the vendor sends once', async (t) => {
    const time = clock()
    const name = database()
    let crashes = 1
    const crashing = await emailApp(t, deps, {
      database: name,
      catcher,
      clock: time,
      options: {
        wrapSender: (sender) => ({
          send: async (email) => {
            const sent = await sender.send(email)
            if (crashes-- > 0) throw new Error('process stopped before recording the send')
            return sent
          }
        })
      }
    })
    const address = uniqueEmail('crash-send')
    await signUp(crashing.app, { email: address, password: 'pw-for-crash-send-1' })
    time.catchUp()
    await t.rejects(crashing.app.email!.tick(), /process stopped/)
    t.equal(apiMails(catcher, address).length, 1, 'the vendor took it')
    const claimed = (await crashing.sends()).find((row) => row.step === 'welcome')!
    t.equal(claimed.state, 'queued')
    t.ok(claimed.leaseUntil !== null && claimed.leaseUntil.getTime() > time.now, 'still leased to the process that stopped')

    const survivor = await emailApp(t, deps, { database: name, catcher, clock: time })
    t.equal((await survivor.app.email!.tick()).claimed, 0, 'nobody takes a leased row')
    time.advance(EMAIL_LEASE_MS + 1000)
    t.equal((await survivor.app.email!.tick()).sent, 1, 'the lease lapsed; the row is sent again')
    const mails = apiMails(catcher, address)
    t.equal(mails.length, 1, 'the Idempotency-Key kept it to one mail')
    const row = (await survivor.sends()).find((candidate) => candidate.step === 'welcome')!
    t.equal(row.state, 'sent')
    t.equal(row.vendorMessageId, mails[0]!.id)
  })

  await t.test('the poller runs by itself, and a tick that fails unexpectedly is logged and followed by the next', async (t) => {
    let failures = 1
    const time = clock()
    const built = await emailApp(t, deps, {
      database: database(),
      catcher,
      clock: time,
      options: {
        poll: true,
        pollIntervalMs: 20,
        wrapSender: (sender) => ({
          send: async (email) => {
            if (failures-- > 0) throw new Error('an unexpected fault')
            return await sender.send(email)
          }
        })
      }
    })
    const address = uniqueEmail('poller')
    await signUp(built.app, { email: address, password: 'pw-for-poller-1' })
    time.catchUp()
    t.ok(await waitFor(() => built.log.lines().some((line) => line['msg'] === 'email: poller tick failed'), 20_000), 'the failed tick is logged')
    // The fault might have come after the vendor took the mail: the row stays leased, as after a crash.
    time.advance(EMAIL_LEASE_MS + 1000)
    t.ok(await waitFor(async () => apiMails(catcher, address).length === 1, 20_000), 'the next ticks carry on and send it, without anyone calling tick')
  })

  await t.test('a vendor outage: backoff, then failed after five attempts, logged', async (t) => {
    const time = clock()
    const closedPort = await freePort()
    const built = await emailApp(t, deps, { database: database(), clock: time, email: { apiBase: `http://127.0.0.1:${closedPort}` }, options: { random: () => 0 } })
    await signUp(built.app, { email: uniqueEmail('outage'), password: 'pw-for-outage-1' })
    time.catchUp()
    const delays: number[] = []
    for (let attempt = 1; attempt <= 5; attempt++) {
      await built.app.email!.tick()
      const row = (await built.sends()).find((candidate) => candidate.step === 'welcome')!
      t.equal(row.attempts, attempt)
      if (attempt < 5) {
        t.equal(row.state, 'queued')
        delays.push(row.nextAttemptAt.getTime() - time.now)
        t.equal((await built.app.email!.tick()).claimed, 0, 'not taken before its retry time')
        time.advance(row.nextAttemptAt.getTime() - time.now)
      } else {
        t.equal(row.state, 'failed')
      }
    }
    // Equal jitter at its low end: half of 60 s x 2^n.
    t.same(delays, [30_000, 60_000, 120_000, 240_000])
    t.equal(built.log.lines().filter((line) => line['msg'] === 'email: send failed; will retry').length, 4)
    t.equal(built.log.lines().filter((line) => line['msg'] === 'email: send failed for good').length, 1)
    t.equal(built.analytics('email_failed').length, 1)
    t.notMatch(built.log.text(), API_KEY, 'the API key is never logged')
  })

  await t.test('unsubscribing: one-click and the confirm form cancel every pending mail; bad links change nothing', async (t) => {
    const built = await emailApp(t, deps, { database: database(), catcher })
    const { app } = built
    const user = await signUp(app, { email: uniqueEmail('leaver'), password: 'pw-for-leaver-1' })
    const link = app.email!.unsubscribeLink(user.userId)
    const form = { 'content-type': 'application/x-www-form-urlencoded' }

    const forged = `${user.userId}.${'A'.repeat(43)}`
    for (const token of [forged, 'nonsense', `${new ObjectId().toHexString()}.${new URL(link).searchParams.get('token')!.split('.')[1]}`]) {
      const answer = await app.inject({ method: 'POST', url: `/api/email/unsubscribe?token=${encodeURIComponent(token)}`, headers: form, payload: 'List-Unsubscribe=One-Click' })
      t.equal(answer.statusCode, 400, token)
      t.match(answer.body, /This link does not work/)
    }
    t.equal((await app.inject({ method: 'POST', url: pathOf(link), headers: form, payload: 'List-Unsubscribe=Other' })).statusCode, 400, 'the RFC 8058 body is required')
    t.equal((await app.inject({ method: 'POST', url: pathOf(link), payload: { 'List-Unsubscribe': 'One-Click' } })).statusCode, 200, 'a JSON body of the same field is read as well')
    t.equal((await built.sends()).filter((row) => row.state === 'canceled').length, 4, 'all four canceled at once')
    t.equal(built.analytics('email_unsubscribed').length, 1)
    t.equal((await app.inject({ method: 'POST', url: pathOf(link), headers: form, payload: 'List-Unsubscribe=One-Click' })).statusCode, 200, 'a second click is fine')
    t.equal(built.analytics('email_unsubscribed').length, 1, 'and counted once')
    t.equal((await app.email!.tick()).sent, 0)
    t.equal((await app.inject({ method: 'GET', url: '/api/email/unsubscribe' })).statusCode, 400, 'no token')

    // Forms stay refused on every other route.
    const elsewhere = await app.inject({ method: 'POST', url: '/api/event', headers: { ...form, ...user.headers }, payload: 'title=x' })
    t.equal(elsewhere.statusCode, 415)
  })

  await t.test('a rotated unsubscribe secret invalidates every link sent before', async (t) => {
    const name = database()
    const before = await emailApp(t, deps, { database: name, catcher })
    const user = await signUp(before.app, { email: uniqueEmail('rotate'), password: 'pw-for-rotate-1' })
    const oldLink = before.app.email!.unsubscribeLink(user.userId)
    const after = await emailApp(t, deps, { database: name, catcher, email: { unsubscribeSecret: 'unsubscribe-secret-two' } })
    const newLink = after.app.email!.unsubscribeLink(user.userId)
    t.not(newLink, oldLink)
    t.equal((await after.app.inject({ method: 'GET', url: pathOf(oldLink) })).statusCode, 400, 'the old link is dead')
    const form = { 'content-type': 'application/x-www-form-urlencoded' }
    t.equal((await after.app.inject({ method: 'POST', url: pathOf(oldLink), headers: form, payload: 'List-Unsubscribe=One-Click' })).statusCode, 400)
    t.equal((await after.sends()).filter((row) => row.state === 'queued').length, 4, 'and changed nothing')
    t.equal((await after.app.inject({ method: 'POST', url: pathOf(newLink), headers: form, payload: 'List-Unsubscribe=One-Click' })).statusCode, 200)
    t.equal((await after.sends()).filter((row) => row.state === 'canceled').length, 4)
  })

  await t.test('webhooks: verified, replay-safe, attributed to their mail; bounce and complaint suppress', async (t) => {
    const time = clock()
    const built = await emailApp(t, deps, { database: database(), catcher, clock: time })
    const { app } = built
    const bouncer = await signUp(app, { email: uniqueEmail('bouncer'), password: 'pw-for-bouncer-1' })
    const complainer = await signUp(app, { email: uniqueEmail('complainer'), password: 'pw-for-complainer-1' })
    time.catchUp()
    await app.email!.tick()
    time.advance(2 * DAY + 1000)
    await app.email!.tick()
    const sent = await built.sends()
    const bouncerShortcuts = sent.find((row) => row.userId === bouncer.userId && row.step === 'shortcuts')!
    t.equal(bouncerShortcuts.state, 'sent')

    const delivered = { type: 'email.delivered', created_at: new Date().toISOString(), data: { email_id: bouncerShortcuts.vendorMessageId } }
    const id = 'msg_replayed'
    const first = await postWebhook(app, delivered, { id })
    t.equal(first.statusCode, 200)
    t.same(first.json(), { received: true })
    const replay = await postWebhook(app, delivered, { id })
    t.equal(replay.statusCode, 200)
    t.same(replay.json(), { received: true, duplicate: true })
    t.equal(built.analytics('email_delivered').length, 1, 'a replay is not applied again')
    t.ok((await built.sends()).find((row) => row._id === bouncerShortcuts._id)?.deliveredAt)

    const stale = await postWebhook(app, delivered, { at: new Date(Date.now() - 6 * 60_000) })
    t.equal(stale.statusCode, 401, 'a timestamp older than five minutes')
    t.match(stale.json().message, /too old/)
    const forged = await postWebhook(app, delivered, { secret: `whsec_${randomBytes(24).toString('base64')}` })
    t.equal(forged.statusCode, 401, 'another secret')
    const unsigned = await app.inject({ method: 'POST', url: '/api/email/webhooks/resend', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(delivered) })
    t.equal(unsigned.statusCode, 401)
    const tampered = JSON.stringify({ ...delivered, type: 'email.bounced' })
    const tamperedAnswer = await app.inject({ method: 'POST', url: '/api/email/webhooks/resend', headers: { ...signResendWebhook(WEBHOOK_SECRET, 'msg_t', new Date(), JSON.stringify(delivered)), 'content-type': 'application/json' }, payload: tampered })
    t.equal(tamperedAnswer.statusCode, 401, 'a body changed after signing')
    const notJson = await app.inject({ method: 'POST', url: '/api/email/webhooks/resend', headers: { ...signResendWebhook(WEBHOOK_SECRET, 'msg_n', new Date(), 'not json'), 'content-type': 'application/json' }, payload: 'not json' })
    t.equal(notJson.statusCode, 401, 'a signed body that is not JSON')
    const notResend = await postWebhook(app, { event: 'something else' })
    t.equal(notResend.statusCode, 401, 'a signed body that is not a Resend event')
    t.match(notResend.json().message, /not a Resend event/)
    t.notOk(await app.mongo.db.collection('emailRecipients').findOne({ _id: bouncer.userId as unknown as ObjectId }), 'no refused webhook suppressed anyone')
    const unmatched = await postWebhook(app, { type: 'email.delivered', data: { email_id: 'not-ours' } })
    t.same(unmatched.json(), { received: true }, 'an event about a mail of no one here is taken and ignored')
    t.ok(built.log.lines().some((line) => line['msg'] === 'email: webhook names no mail of this service'))

    // The bounce of the shortcuts mail names the shortcuts step, not the latest one.
    const bounce = await postWebhook(app, { type: 'email.bounced', created_at: new Date().toISOString(), data: { email_id: bouncerShortcuts.vendorMessageId, bounce: { type: 'Permanent' } } })
    t.equal(bounce.statusCode, 200)
    t.same(built.analytics('email_bounced').map((line) => line['step']), ['shortcuts'])
    const bouncerRows = (await built.sends()).filter((row) => row.userId === bouncer.userId)
    t.same(bouncerRows.filter((row) => row.state === 'canceled').map((row) => row.step).sort(), ['booking', 'connect-calendar'])

    // A complaint found through the tags alone (the vendor id was never recorded).
    const complaint = await postWebhook(app, { type: 'email.complained', data: { email_id: 'unknown-id', tags: { user_id: complainer.userId, step: 'welcome' } } })
    t.equal(complaint.statusCode, 200)
    t.same(built.analytics('email_complained').map((line) => line['step']), ['welcome'])
    t.equal((await built.sends()).filter((row) => row.userId === complainer.userId && row.state === 'queued').length, 0)
    time.advance(10 * DAY)
    t.equal((await app.email!.tick()).sent, 0, 'suppressed users get nothing more')
  })

  await t.test('the mail catcher\'s control route sends signed webhooks the backend accepts', async (t) => {
    const built = await emailApp(t, deps, { database: database(), catcher })
    const base = await listen(built.app)
    catcher.setWebhookTarget({ url: `${base}/api/email/webhooks/resend`, secret: WEBHOOK_SECRET })
    t.teardown(() => { catcher.setWebhookTarget(undefined) })
    const address = uniqueEmail('control')
    const user = await signUp(built.app, { email: address, password: 'pw-for-control-1' })
    await built.app.email!.tick()
    const mail = apiMails(catcher, address)[0]!
    const answer = await fetch(`${catcher.url}/control/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ mailId: mail.id, type: 'email.complained' }) })
    t.same(await answer.json(), { status: 200 })
    t.equal((await built.sends()).filter((row) => row.userId === user.userId && row.state === 'canceled').length, 3)
    const page = await (await fetch(catcher.url)).text()
    t.match(page, /email\.complained: backend answered 200/)
  })

  await t.test('allowlist: other addresses stay pending, are sent once the list is cleared, and stale steps are not', async (t) => {
    const time = clock()
    const name = database()
    const guarded = await emailApp(t, deps, { database: name, catcher, clock: time, email: { allowlist: [' Listed@Example.com '] } })
    const listed = await signUp(guarded.app, { email: 'listed@example.com', password: 'pw-for-listed-1' })
    const early = await signUp(guarded.app, { email: uniqueEmail('early'), password: 'pw-for-early-1' })
    time.catchUp()
    await guarded.app.email!.tick()
    t.equal(apiMails(catcher, 'listed@example.com').length, 1, 'matched case-insensitively')
    const held = (await guarded.sends()).find((row) => row.userId === early.userId && row.step === 'welcome')!
    t.equal(held.state, 'queued', 'held, not skipped')
    t.equal(held.reason, 'allowlist')

    time.advance(2 * DAY + 60_000)
    await guarded.app.email!.tick()
    t.equal((await guarded.sends()).find((row) => row._id === held._id)?.state, 'stale', 'more than two days past due')

    // A sign-up now, on the test's clock (the write a sign-up makes).
    const late = { userId: new ObjectId().toHexString() }
    await guarded.app.users.recordAuthentication(late.userId, { email: uniqueEmail('late'), name: 'Late', now: new Date(time.now), emailVerified: false })
    time.advance(1000)
    await guarded.app.email!.tick()
    t.equal((await guarded.sends()).filter((row) => row.userId === late.userId && row.state === 'queued' && row.reason === 'allowlist').length, 1)

    const cleared = await emailApp(t, deps, { database: name, catcher, clock: time, email: { allowlist: [] } })
    await cleared.app.email!.tick()
    const rows = await cleared.sends()
    t.equal(rows.find((row) => row.userId === late.userId && row.step === 'welcome')?.state, 'sent', 'the pending welcome goes out')
    t.equal(rows.find((row) => row.userId === early.userId && row.step === 'shortcuts')?.state, 'sent', 'the step that is due now goes out')
    t.equal(rows.find((row) => row.userId === early.userId && row.step === 'welcome')?.state, 'stale', 'the old one does not')
    t.ok(listed.userId)
  })

  await t.test('the log provider logs the rendered mail and sends nothing', async (t) => {
    const built = await emailApp(t, deps, { database: database(), email: { provider: 'log', apiKey: undefined, webhookSecret: undefined, unsubscribeSecret: undefined } })
    const before = apiMails(catcher).length
    const address = uniqueEmail('logged')
    const user = await signUp(built.app, { email: address, password: 'pw-for-logged-1' })
    t.equal((await built.app.email!.tick()).sent, 1)
    const line = built.log.lines().find((candidate) => candidate['msg'] === 'email (log provider, not sent)')
    t.equal(line?.['emailTo'], address)
    t.equal(line?.['subject'], 'Welcome to Calendar')
    t.match(String(line?.['text']), /Unsubscribe: http:\/\/localhost:3000\/api\/email\/unsubscribe\?token=\[redacted\]/, 'the link, without its token')
    t.notMatch(built.log.text(), new URL(built.app.email!.unsubscribeLink(user.userId)).searchParams.get('token')!, 'no unsubscribe token in any log line')
    t.equal(apiMails(catcher).length, before, 'nothing reached the vendor')
    t.equal((await built.app.inject({ method: 'POST', url: '/api/email/webhooks/resend', payload: {} })).statusCode, 404, 'no vendor, no webhook route')
    const link = built.app.email!.unsubscribeLink(user.userId)
    t.equal((await built.app.inject({ method: 'GET', url: pathOf(link) })).statusCode, 200, 'links work without an unsubscribe secret of their own')
  })
})
