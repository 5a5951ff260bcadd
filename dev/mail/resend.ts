// The subset of Resend's HTTP API that the backend's `mailer` provider uses, served by the mail
// catcher: POST /emails (bearer key, Idempotency-Key), and signed webhooks (Svix scheme) for a
// caught mail, sent to the backend on request. See README.md for the documented behaviour each
// part follows.
import { createHash, randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { Webhook } from 'standardwebhooks'
import { extractLinks, type CaughtMail } from './page.js'

const WEBHOOK_TYPES = ['email.delivered', 'email.bounced', 'email.complained'] as const
export type WebhookType = typeof WEBHOOK_TYPES[number]

export interface WebhookTarget {
  /** The backend's POST /api/email/webhooks/resend. */
  url: string
  /** The endpoint's signing secret, `whsec_<base64>` as Resend shows it. */
  secret: string
}

export interface ResendApiOptions {
  /** The only key accepted; absent: any key (but a key is still required, as at Resend). */
  apiKey?: string
  webhook?: WebhookTarget
}

const Address = Type.String({ minLength: 3 })
const SendEmailBody = Type.Object({
  from: Address,
  to: Type.Union([Address, Type.Array(Address, { minItems: 1, maxItems: 50 })]),
  subject: Type.String({ minLength: 1 }),
  html: Type.Optional(Type.String()),
  text: Type.Optional(Type.String()),
  headers: Type.Optional(Type.Record(Type.String(), Type.String())),
  tags: Type.Optional(Type.Array(Type.Object({ name: Type.String({ pattern: '^[A-Za-z0-9_-]{1,256}$' }), value: Type.String({ pattern: '^[A-Za-z0-9_-]{1,256}$' }) })))
})
type SendEmailBody = Static<typeof SendEmailBody>

const IDEMPOTENCY_MEMORY_MS = 24 * 60 * 60 * 1000
const MAX_IDEMPOTENCY_KEY = 256

function errorBody (statusCode: number, name: string, message: string) {
  return { statusCode, name, message }
}

export interface ResendApi {
  /** Signs and posts a webhook for a mail this API took; the backend's status, or an error text. */
  sendWebhook: (mailId: string, type: WebhookType) => Promise<{ status: number } | { error: string }>
  setWebhookTarget: (target: WebhookTarget | undefined) => void
}

export function registerResendApi (http: FastifyInstance, mails: CaughtMail[], keep: (mail: CaughtMail) => void, options: ResendApiOptions): ResendApi {
  let webhook = options.webhook
  const idempotent = new Map<string, { bodyHash: string, id: string, at: number }>()

  http.post('/emails', async (request, reply) => {
    const authorization = request.headers.authorization ?? ''
    const key = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1]
    if (key === undefined) return await reply.code(401).send(errorBody(401, 'missing_api_key', 'Missing API key in the authorization header.'))
    if (options.apiKey !== undefined && key !== options.apiKey) return await reply.code(403).send(errorBody(403, 'invalid_api_key', 'API key is invalid.'))
    const given = (request.body ?? {}) as Record<string, unknown>
    const missing = (['from', 'to', 'subject'] as const).find((field) => given[field] === undefined)
    if (missing !== undefined) return await reply.code(422).send(errorBody(422, 'missing_required_field', `Missing \`${missing}\` field.`))
    if (!Value.Check(SendEmailBody, request.body)) {
      const first = [...Value.Errors(SendEmailBody, request.body)][0]
      return await reply.code(422).send(errorBody(422, 'validation_error', `Invalid \`${first?.path.slice(1) || 'body'}\`: ${first?.message ?? 'not an email'}`))
    }
    const body: SendEmailBody = request.body
    if (body.html === undefined && body.text === undefined) return await reply.code(422).send(errorBody(422, 'validation_error', 'Either `html` or `text` must be provided.'))

    const idempotencyKey = request.headers['idempotency-key']
    const bodyHash = createHash('sha256').update(JSON.stringify(body)).digest('hex')
    if (typeof idempotencyKey === 'string') {
      if (idempotencyKey.length === 0 || idempotencyKey.length > MAX_IDEMPOTENCY_KEY) {
        return await reply.code(400).send(errorBody(400, 'invalid_idempotency_key', 'The key must be between 1-256 chars.'))
      }
      const earlier = idempotent.get(idempotencyKey)
      if (earlier !== undefined && Date.now() - earlier.at < IDEMPOTENCY_MEMORY_MS) {
        if (earlier.bodyHash !== bodyHash) return await reply.code(409).send(errorBody(409, 'invalid_idempotent_request', 'Same idempotency key used with a different request payload.'))
        return { id: earlier.id }
      }
    }

    const id = randomUUID()
    const to = [body.to].flat()
    const text = body.text ?? ''
    const html = body.html ?? null
    keep({
      id,
      receivedAt: new Date().toISOString(),
      envelope: { from: body.from, to },
      from: body.from,
      to: to.join(', '),
      subject: body.subject,
      text,
      html,
      links: extractLinks(html, text),
      source: 'api',
      headers: body.headers ?? {},
      tags: Object.fromEntries((body.tags ?? []).map((tag) => [tag.name, tag.value])),
      webhooks: []
    })
    if (typeof idempotencyKey === 'string') idempotent.set(idempotencyKey, { bodyHash, id, at: Date.now() })
    return { id }
  })

  async function sendWebhook (mailId: string, type: WebhookType): Promise<{ status: number } | { error: string }> {
    const mail = mails.find((candidate) => candidate.id === mailId && candidate.source === 'api')
    if (mail === undefined) return { error: 'no mail with this id came through the API' }
    if (webhook === undefined) return { error: 'no webhook endpoint is set' }
    const createdAt = new Date()
    const payload = JSON.stringify({
      type,
      created_at: createdAt.toISOString(),
      data: {
        created_at: mail.receivedAt,
        email_id: mail.id,
        from: mail.from,
        to: mail.envelope.to,
        subject: mail.subject,
        tags: mail.tags ?? {},
        ...(type === 'email.bounced' ? { bounce: { type: 'Permanent', subType: 'General', message: 'The recipient\'s mail server permanently rejected the email.' } } : {})
      }
    })
    const messageId = `msg_${randomUUID().replaceAll('-', '')}`
    const signature = new Webhook(webhook.secret).sign(messageId, createdAt, payload)
    let status: number
    try {
      const response = await fetch(webhook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'svix-id': messageId,
          'svix-timestamp': String(Math.floor(createdAt.getTime() / 1000)),
          'svix-signature': signature
        },
        body: payload,
        signal: AbortSignal.timeout(10_000)
      })
      status = response.status
    } catch (error) {
      return { error: `the webhook endpoint did not answer: ${(error as Error).message}` }
    }
    mail.webhooks?.push({ type, status, at: createdAt.toISOString() })
    return { status }
  }

  const ControlBody = Type.Object({ mailId: Type.String({ minLength: 1 }), type: Type.Union(WEBHOOK_TYPES.map((name) => Type.Literal(name))) })
  // The page's buttons post a form and come back to the mail; scripts and tests post JSON.
  http.post('/control/webhooks', async (request, reply) => {
    if (!Value.Check(ControlBody, request.body)) return await reply.code(400).send({ error: 'mailId and a type of email.delivered, email.bounced or email.complained are required' })
    const { mailId, type } = request.body
    const outcome = await sendWebhook(mailId, type)
    if (request.headers['content-type']?.startsWith('application/x-www-form-urlencoded') === true) return await reply.redirect(`/#mail-${encodeURIComponent(mailId)}`, 303)
    return await reply.code('error' in outcome ? 409 : 200).send(outcome)
  })

  return { sendWebhook, setWebhookTarget: (target) => { webhook = target } }
}
