// Webhook notices at the mail catcher: the local stack's maintenance scheduler reports a failed run
// by POSTing a JSON notice ({text, event, reason, at}, the shape chat and paging webhooks take) to
// scheduler.failureWebhook, which the local stack points here. Each notice is kept as an entry of
// its own beside the mails, titled with its text, so a developer sees a failed maintenance run where
// they already look for the account emails.
import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { CaughtMail } from './page.js'

export const MAINTENANCE_HOOK_PATH = '/hooks/maintenance'

// A notice is a line of text and a few fields; anything larger is not one.
const MAX_NOTICE_BYTES = 16 * 1024

// Only `text` is required, as by a chat service's incoming webhook; the other fields are kept as sent.
const NoticeBody = Type.Object({ text: Type.String({ minLength: 1, maxLength: 2000 }) })

export function registerWebhookNotices (http: FastifyInstance, keep: (mail: CaughtMail) => void): void {
  http.post(MAINTENANCE_HOOK_PATH, { bodyLimit: MAX_NOTICE_BYTES }, async (request, reply) => {
    // The form parser the page's buttons need would take a form here too; a notice is JSON only.
    if (request.headers['content-type']?.split(';')[0]?.trim().toLowerCase() !== 'application/json') {
      return await reply.code(415).send({ error: 'a notice is a JSON body (content-type: application/json)' })
    }
    if (!Value.Check(NoticeBody, request.body)) return await reply.code(400).send({ error: 'a notice is a JSON object with a non-empty "text" of at most 2000 characters' })
    const notice = request.body as Record<string, unknown> & { text: string }
    const id = randomUUID()
    keep({
      id,
      receivedAt: new Date().toISOString(),
      envelope: { from: null, to: [] },
      from: typeof notice['event'] === 'string' ? `webhook notice: ${notice['event']}` : 'webhook notice',
      to: `POST ${MAINTENANCE_HOOK_PATH}`,
      subject: notice.text,
      text: JSON.stringify(notice, null, 2),
      html: null,
      // The notice's reason names internal addresses; they are not links to follow.
      links: [],
      source: 'webhook',
      notice
    })
    return await reply.code(201).send({ id })
  })
}
