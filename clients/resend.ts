// The email block's senders: `mailer` is Resend's HTTP API (POST /emails with a bearer key and an
// Idempotency-Key, answered with the mail's id); `log` writes the rendered mail to the log and
// sends nothing.
import type { FastifyBaseLogger } from 'fastify'
import { retryAfterMs } from '../lib/backoff.js'
import { EmailSendError, type EmailSender, type OutgoingEmail } from '../lib/email-vendor.js'
import { redactUrl } from '../lib/logging.js'

const RESEND_API_BASE = 'https://api.resend.com'
/** Resend answers within seconds; a send that takes longer is retried under the same key. */
const SEND_DEADLINE_MS = 15_000

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

/**
 * Logs what would be sent (subject, recipient, text) and sends nothing. The text's links go
 * through the log's URL redaction: an unsubscribe token is a credential of its user.
 */
export class LogSender implements EmailSender {
  readonly #log: FastifyBaseLogger

  constructor (log: FastifyBaseLogger) {
    this.#log = log
  }

  async send (email: OutgoingEmail): Promise<{ id: string }> {
    const id = `log-${email.idempotencyKey}`
    const text = email.text.replace(/https?:\/\/[^\s<>"]+/g, (url) => redactUrl(url))
    this.#log.info({ emailTo: email.to, subject: email.subject, text, idempotencyKey: email.idempotencyKey }, 'email (log provider, not sent)')
    return { id }
  }
}
