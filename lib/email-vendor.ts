// The email block's port to its vendor: send one mail (clients/resend.ts), verify one webhook.
import { Webhook, WebhookVerificationError } from 'standardwebhooks'

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

interface VerifiedWebhook {
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
