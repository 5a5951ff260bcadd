// The email block's port to its vendor: send one mail, verify one webhook. `mailer` is Resend's
// HTTP API (POST /emails with a bearer key and an Idempotency-Key, answered with the mail's id);
// `log` writes the rendered mail to the log and sends nothing.
import type { FastifyBaseLogger } from 'fastify'
import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import { retryAfterMs } from './backoff.js'

export const RESEND_API_BASE = 'https://api.resend.com'
/** Resend answers within seconds; a send that takes longer is retried under the same key. */
const SEND_DEADLINE_MS = 15_000

export interface OutgoingEmail {
  to: string
  subject: string
  html: string
  text: string
  headers: Record<string, string>
  /** Resend's tags (ASCII letters, digits, `_` and `-`): webhooks carry them back. */
  tags: Record<string, string>
  /** The same key for every attempt of one mail: the vendor sends it once. */
  idempotencyKey: string
}

export interface EmailSender {
  /** The vendor's id of the mail. Rejects with EmailSendError. */
  send: (email: OutgoingEmail) => Promise<{ id: string }>
}

export class EmailSendError extends Error {
  /** The vendor refused the mail itself (a malformed address, say): retrying cannot help. */
  readonly permanent: boolean
  readonly status: number | undefined
  readonly retryAfterMs: number | null

  constructor (message: string, options: { permanent: boolean, status?: number, retryAfterMs?: number | null, cause?: unknown }) {
    super(message, { cause: options.cause })
    this.name = 'EmailSendError'
    this.permanent = options.permanent
    this.status = options.status
    this.retryAfterMs = options.retryAfterMs ?? null
  }
}

// Resend's refusals: 400 and 422 name something wrong with the mail; 401/403 a key an operator
// must fix (a retry after the fix works); 409 an idempotent request still in flight; 429 a rate or
// quota limit; 5xx the vendor's own trouble.
function isPermanentRefusal (status: number): boolean {
  return status === 400 || status === 422
}

export class ResendSender implements EmailSender {
  readonly #apiKey: string
  readonly #from: string
  readonly #endpoint: string

  constructor (settings: { apiKey: string, from: string, apiBase?: string | undefined }) {
    this.#apiKey = settings.apiKey
    this.#from = settings.from
    this.#endpoint = new URL('/emails', settings.apiBase ?? RESEND_API_BASE).toString()
  }

  async send (email: OutgoingEmail): Promise<{ id: string }> {
    let response: Response
    try {
      response = await fetch(this.#endpoint, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.#apiKey}`,
          'content-type': 'application/json',
          'idempotency-key': email.idempotencyKey
        },
        body: JSON.stringify({
          from: this.#from,
          to: [email.to],
          subject: email.subject,
          html: email.html,
          text: email.text,
          headers: email.headers,
          tags: Object.entries(email.tags).map(([name, value]) => ({ name, value }))
        }),
        signal: AbortSignal.timeout(SEND_DEADLINE_MS)
      })
    } catch (error) {
      throw new EmailSendError('the mail vendor could not be reached', { permanent: false, cause: error })
    }
    const body = await response.json().catch(() => undefined) as { id?: unknown, message?: unknown, name?: unknown } | undefined
    if (response.ok && typeof body?.id === 'string') return { id: body.id }
    const reason = typeof body?.name === 'string' ? body.name : 'no reason given'
    throw new EmailSendError(`the mail vendor answered ${response.status} (${reason})`, {
      permanent: isPermanentRefusal(response.status),
      status: response.status,
      retryAfterMs: retryAfterMs(response.headers.get('retry-after'), new Date())
    })
  }
}

/** Logs what would be sent (subject, recipient, text) and sends nothing. */
export class LogSender implements EmailSender {
  readonly #log: FastifyBaseLogger

  constructor (log: FastifyBaseLogger) {
    this.#log = log
  }

  async send (email: OutgoingEmail): Promise<{ id: string }> {
    const id = `log-${email.idempotencyKey}`
    this.#log.info({ emailTo: email.to, subject: email.subject, text: email.text, idempotencyKey: email.idempotencyKey }, 'email (log provider, not sent)')
    return { id }
  }
}

export interface VerifiedWebhook {
  /** The webhook's own id (svix-id): the same on every retry of one event. */
  id: string
  payload: unknown
}

export type WebhookVerification = { ok: true, webhook: VerifiedWebhook } | { ok: false, reason: string }

/**
 * Resend signs webhooks with Svix's scheme (svix-id, svix-timestamp, svix-signature over the raw
 * body), which is the Standard Webhooks scheme under other header names. The library refuses a
 * timestamp more than five minutes from now either way, so a captured request cannot be replayed later.
 */
export function verifyResendWebhook (secret: string, rawBody: Buffer, headers: Record<string, string | string[] | undefined>): WebhookVerification {
  const header = (name: string): string => {
    const value = headers[name]
    return Array.isArray(value) ? value.join(' ') : value ?? ''
  }
  const id = header('svix-id')
  try {
    const payload = new Webhook(secret).verify(rawBody, {
      'webhook-id': id,
      'webhook-timestamp': header('svix-timestamp'),
      'webhook-signature': header('svix-signature')
    })
    return { ok: true, webhook: { id, payload } }
  } catch (error) {
    if (error instanceof WebhookVerificationError) return { ok: false, reason: error.message }
    if (error instanceof SyntaxError) return { ok: false, reason: 'the signed body is not JSON' }
    throw error
  }
}

/** Signs a body as Resend does (the mail catcher's control route and tests use it). */
export function signResendWebhook (secret: string, id: string, at: Date, rawBody: string): Record<string, string> {
  return {
    'svix-id': id,
    'svix-timestamp': String(Math.floor(at.getTime() / 1000)),
    'svix-signature': new Webhook(secret).sign(id, at, rawBody)
  }
}
