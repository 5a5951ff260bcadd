// The email block's use cases (specification, "Optional integrations"): enrolling each new user in
// the welcome sequence, the poller's round (sweep, claim, decide, send, settle), unsubscribing, and
// the vendor's delivery webhooks.
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyBaseLogger } from 'fastify'
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { EmailConfig } from '../schemas/config.js'
import type { Analytics } from '../lib/analytics.js'
import {
  afterFailure, decideSend, enrollmentRows, sendRowId, EMAIL_STEPS, type EmailStepKey, type Recipient, type ScheduleProfile
} from '../lib/email-sequence.js'
import { listUnsubscribeHeaders, unsubscribeKey, unsubscribeLink, userOfUnsubscribeToken } from '../lib/email-links.js'
import { renderEmail } from '../lib/email-templates.js'
import { EmailSendError, verifyResendWebhook, type EmailSender } from '../lib/email-vendor.js'
import type { EmailRecipientDocument, EmailSendDocument, EmailStore } from '../stores/email.js'
import type { UserDocument, UserStore } from '../stores/users.js'

/** Rows claimed per tick, and the pause between two sends (the vendor's rate limit is per second). */
const EMAIL_BATCH = 50
export const EMAIL_SEND_SPACING_MS = 250
export const EMAIL_POLL_INTERVAL_MS = { real: 60_000, fast: 10_000 } as const satisfies Record<ScheduleProfile, number>

interface TickReport {
  enrolled: number
  claimed: number
  sent: number
}

type WebhookOutcome =
  | { status: 'refused', reason: string }
  | { status: 'duplicate' }
  | { status: 'applied', type: string, matched: boolean }

export interface EmailBlock {
  /** Creates the user's rows (a second call is a no-op) and clears the user's mark. */
  enroll: (user: Pick<UserDocument, '_id' | 'signedUpAt'>) => Promise<void>
  /** One round of the poller: enrolls marked users, then sends what is due. */
  tick: () => Promise<TickReport>
  unsubscribeLink: (userId: string) => string
  /** The user a link names, when the link is valid under the current secret. */
  userOfToken: (token: string) => string | undefined
  /** Stops every pending mail of the user; undefined when the token is not valid. */
  unsubscribe: (token: string, via: 'page' | 'one-click') => Promise<{ userId: string } | undefined>
  /** Verifies, de-duplicates and applies one vendor webhook. */
  receiveWebhook: (rawBody: Buffer, headers: Record<string, string | string[] | undefined>) => Promise<WebhookOutcome>
  /** Whether the vendor's webhooks can be verified (the `mailer` provider has a webhook secret). */
  acceptsWebhooks: boolean
}

export interface EmailOptions {
  now?: () => Date
  random?: () => number
  /** Poll interval; default by schedule profile. */
  pollIntervalMs?: number
  /** Pause between two sends. */
  sendSpacingMs?: number
  pause?: (ms: number) => Promise<void>
  /** Start the timer (tests drive `tick` themselves). Default true. */
  poll?: boolean
  /** Wraps the vendor client (tests put faults between it and the database). */
  wrapSender?: (sender: EmailSender) => EmailSender
}

const ResendWebhookPayload = Type.Object({
  type: Type.String(),
  created_at: Type.Optional(Type.String()),
  data: Type.Object({
    email_id: Type.Optional(Type.String()),
    tags: Type.Optional(Type.Union([Type.Record(Type.String(), Type.String()), Type.Array(Type.Object({ name: Type.String(), value: Type.String() }))]))
  })
})
type ResendWebhookPayload = Static<typeof ResendWebhookPayload>

function tagsOf (payload: ResendWebhookPayload): Record<string, string> {
  const tags = payload.data.tags
  if (tags === undefined) return {}
  return Array.isArray(tags) ? Object.fromEntries(tags.map((tag) => [tag.name, tag.value])) : tags
}

interface BlockParts {
  config: EmailConfig
  apiUrl: string
  webUrl: string
  serviceToken: string
  users: UserStore
  store: EmailStore
  sender: EmailSender
  analytics: Analytics
  log: FastifyBaseLogger
  options: EmailOptions
}

export function createEmailBlock (parts: BlockParts): EmailBlock {
  const { config, users, store, sender, analytics, log, options } = parts
  const now = options.now ?? (() => new Date())
  const pause = options.pause ?? (async (ms: number) => { await sleep(ms) })
  const spacing = options.sendSpacingMs ?? EMAIL_SEND_SPACING_MS
  const profile = config.scheduleProfile
  const linkKey = unsubscribeKey(config.unsubscribeSecret, parts.serviceToken)

  async function enroll (user: Pick<UserDocument, '_id' | 'signedUpAt'>): Promise<void> {
    const userId = user._id.toHexString()
    await store.enroll(enrollmentRows(userId, user.signedUpAt, profile, now()))
    await users.clearEmailEnrollmentMark(userId)
  }

  async function sweep (): Promise<number> {
    const marked = await users.markedForEmailEnrollment(EMAIL_BATCH)
    for (const user of marked) await enroll(user)
    if (marked.length > 0) log.info({ enrolled: marked.length }, 'email: enrolled users whose sign-up had not finished enrolling')
    return marked.length
  }

  async function suppress (userId: string, reason: EmailRecipientDocument['reason']): Promise<boolean> {
    const { first, canceled } = await store.suppress(userId, reason, now())
    log.info({ userId, reason, canceled }, 'email: recipient suppressed, pending mails canceled')
    return first
  }

  async function recipientOf (userId: string): Promise<{ recipient: Recipient, name: string | undefined } | undefined> {
    const user = await users.findById(userId)
    if (user === null) return undefined
    const suppressed = await store.isSuppressed(userId)
    return {
      // A name is whatever the person typed at sign-up: mailed to an address nobody has proven,
      // it would be a stranger's words in our mail to someone else, so it waits for verification.
      name: user.emailVerified === true ? user.name : undefined,
      recipient: {
        email: user.email,
        suppressed,
        hasProviderCalendar: (user.providerConnections?.length ?? 0) > 0 || user.google?.gRefreshToken !== undefined
      }
    }
  }

  /** True when a mail went out. */
  async function work (row: EmailSendDocument): Promise<boolean> {
    const found = await recipientOf(row.userId)
    const decision = decideSend({ step: row.step, dueAt: row.dueAt, now: now(), profile, allowlist: config.allowlist, recipient: found?.recipient })
    if (decision.action === 'finish') {
      await store.settle(row, { state: decision.state, reason: decision.reason })
      analytics.capture({ name: 'email_skipped', distinctId: row.userId, properties: { step: row.step, reason: decision.reason } })
      return false
    }
    if (decision.action === 'hold') {
      // Looked at again on a later tick, behind the rows that became due meanwhile.
      await store.settle(row, { reason: decision.reason, nextAttemptAt: now() })
      return false
    }
    const recipient = found!.recipient
    const link = unsubscribeLink(parts.apiUrl, linkKey, row.userId)
    const rendered = renderEmail(row.step, { name: found!.name, webUrl: parts.webUrl, unsubscribeLink: link })
    try {
      const { id } = await sender.send({
        to: recipient.email,
        ...rendered,
        headers: listUnsubscribeHeaders(link),
        tags: { user_id: row.userId, step: row.step },
        idempotencyKey: row._id
      })
      // Sent is sent, even if an unsubscribe canceled the row while the mail was on its way.
      await store.settle(row, { state: 'sent', sentAt: now(), vendorMessageId: id, attempts: row.attempts + 1, reason: null }, false)
      analytics.capture({ name: 'email_sent', distinctId: row.userId, properties: { step: row.step, attempts: row.attempts + 1 } })
      return true
    } catch (error) {
      if (!(error instanceof EmailSendError)) throw error
      const outcome = afterFailure(row.attempts, error.permanent, now(), options.random)
      const logged = { rowId: row._id, step: row.step, attempts: outcome.attempts, status: error.status, reason: error.message }
      if (outcome.state === 'failed') {
        log.error(logged, 'email: send failed for good')
        await store.settle(row, { state: 'failed', attempts: outcome.attempts, reason: error.message })
        analytics.capture({ name: 'email_failed', distinctId: row.userId, properties: { step: row.step, attempts: outcome.attempts, reason: error.message } })
      } else {
        const retryAt = error.retryAfterMs === null ? outcome.nextAttemptAt : new Date(Math.max(outcome.nextAttemptAt.getTime(), now().getTime() + error.retryAfterMs))
        log.warn({ ...logged, retryAt }, 'email: send failed; will retry')
        await store.settle(row, { attempts: outcome.attempts, nextAttemptAt: retryAt, reason: error.message })
      }
      return false
    }
  }

  async function tick (): Promise<TickReport> {
    const enrolled = await sweep()
    let claimed = 0
    let sent = 0
    for (; claimed < EMAIL_BATCH; claimed++) {
      const row = await store.claimDue(now())
      if (row === null) break
      if (sent > 0 && spacing > 0) await pause(spacing)
      if (await work(row)) sent++
    }
    const queueDepth = await store.queueDepth()
    analytics.capture({ name: 'email_heartbeat', distinctId: 'email-poller', properties: { queueDepth } })
    return { enrolled, claimed, sent }
  }

  async function rowOfWebhook (payload: ResendWebhookPayload): Promise<EmailSendDocument | null> {
    const emailId = payload.data.email_id
    const byVendorId = emailId === undefined ? null : await store.byVendorId(emailId)
    if (byVendorId !== null) return byVendorId
    // A process that stopped between the vendor's answer and recording it left no vendor id: the
    // tags sent with the mail still name its row.
    const tags = tagsOf(payload)
    const { user_id: userId, step } = tags
    if (userId === undefined || !EMAIL_STEPS.some((candidate) => candidate.key === step)) return null
    return await store.byId(sendRowId(userId, step as EmailStepKey))
  }

  async function applyWebhook (payload: ResendWebhookPayload): Promise<boolean> {
    const row = await rowOfWebhook(payload)
    if (row === null) return false
    const at = now()
    switch (payload.type) {
      case 'email.delivered':
        await store.mark(row._id, 'deliveredAt', at)
        analytics.capture({ name: 'email_delivered', distinctId: row.userId, properties: { step: row.step } })
        break
      case 'email.bounced':
        await store.mark(row._id, 'bouncedAt', at)
        await suppress(row.userId, 'bounced')
        analytics.capture({ name: 'email_bounced', distinctId: row.userId, properties: { step: row.step } })
        break
      case 'email.complained':
        await store.mark(row._id, 'complainedAt', at)
        await suppress(row.userId, 'complained')
        analytics.capture({ name: 'email_complained', distinctId: row.userId, properties: { step: row.step } })
        break
      default:
        break
    }
    return true
  }

  return {
    enroll,
    tick,
    unsubscribeLink: (userId) => unsubscribeLink(parts.apiUrl, linkKey, userId),
    userOfToken: (token) => userOfUnsubscribeToken(linkKey, token),
    async unsubscribe (token, via) {
      const userId = userOfUnsubscribeToken(linkKey, token)
      if (userId === undefined) return undefined
      if (await suppress(userId, 'unsubscribed')) analytics.capture({ name: 'email_unsubscribed', distinctId: userId, properties: { reason: via } })
      return { userId }
    },
    acceptsWebhooks: config.webhookSecret !== undefined,
    async receiveWebhook (rawBody, headers) {
      if (config.webhookSecret === undefined) return { status: 'refused', reason: 'no webhook secret configured' }
      const verified = verifyResendWebhook(config.webhookSecret, rawBody, headers)
      if (!verified.ok) return { status: 'refused', reason: verified.reason }
      if (!Value.Check(ResendWebhookPayload, verified.webhook.payload)) return { status: 'refused', reason: 'the body is not a Resend event' }
      const payload = verified.webhook.payload
      if (!await store.rememberWebhook(verified.webhook.id, payload.type, now())) return { status: 'duplicate' }
      try {
        const matched = await applyWebhook(payload)
        if (!matched) log.warn({ webhookId: verified.webhook.id, type: payload.type }, 'email: webhook names no mail of this service')
        return { status: 'applied', type: payload.type, matched }
      } catch (error) {
        // Not remembered, so the vendor's retry applies it.
        await store.forgetWebhook(verified.webhook.id).catch(() => {})
        throw error
      }
    }
  }
}
