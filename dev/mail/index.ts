// A local mail catcher for the development stack: an SMTP server that accepts every mail (and any
// login) on 127.0.0.1, keeps the latest ones in memory, and shows them on a small web page and as
// JSON. Account emails (password reset links) of the local stack land here, so a person can click
// them and a test can read them; so do the maintenance scheduler's failure notices (hooks.ts).
import { LOOPBACK, refuseProduction } from '../stand-in/index.js'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { simpleParser, type AddressObject } from 'mailparser'
import { SMTPServer, type SMTPServerAddress } from 'smtp-server'
import formbody from '@fastify/formbody'
import { extractLinks, PAGE_CSP, renderPage, type CaughtMail } from './page.js'
import { registerResendApi, type ResendApiOptions, type WebhookTarget, type WebhookType } from './resend.js'
import { registerWebhookNotices } from './hooks.js'

export type { CaughtMail } from './page.js'

export interface MailCatcherOptions {
  /** 0 or absent: any free port. */
  smtpPort?: number
  /** 0 or absent: any free port. */
  httpPort?: number
  /** How many mails are kept; older ones are dropped. Default 100. */
  limit?: number
  /** Resend's API subset (POST /emails) and where its webhooks go. */
  resend?: ResendApiOptions
}

export interface MailCatcher {
  smtpPort: number
  /** The web page; the JSON list is at `${url}/messages.json`. */
  url: string
  /** Newest first. */
  messages (): CaughtMail[]
  /** Signs and sends a Resend webhook for a mail taken through POST /emails. */
  sendWebhook (mailId: string, type: WebhookType): Promise<{ status: number } | { error: string }>
  setWebhookTarget (target: WebhookTarget | undefined): void
  close (): Promise<void>
}

const MAX_MAIL_BYTES = 10 * 1024 * 1024

function addressText (value: AddressObject | AddressObject[] | undefined): string {
  if (value === undefined) return ''
  return (Array.isArray(value) ? value : [value]).map((address) => address.text).join(', ')
}

function envelopeAddress (address: SMTPServerAddress | false): string | null {
  return address === false ? null : address.address
}

export async function startMailCatcher (options: MailCatcherOptions = {}): Promise<MailCatcher> {
  refuseProduction('dev/mail (a mail catcher)')
  const limit = options.limit ?? 100
  if (!Number.isInteger(limit) || limit < 1) throw new Error('limit must be a positive integer')

  const mails: CaughtMail[] = []
  let received = 0
  function keep (mail: CaughtMail): void {
    mails.unshift(mail)
    mails.splice(limit)
  }

  const smtp = new SMTPServer({
    banner: 'local mail catcher',
    // Loopback only, so plain text is fine, and a client that is offered STARTTLS would take it
    // and then fail on the self-signed certificate.
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: true,
    size: MAX_MAIL_BYTES,
    closeTimeout: 500,
    logger: false,
    // Any user name and password are accepted, and neither is kept.
    onAuth (auth, _session, callback) {
      callback(null, { user: auth.username ?? 'anonymous' })
    },
    onData (stream, session, callback) {
      simpleParser(stream).then((parsed) => {
        if (stream.sizeExceeded) {
          callback(Object.assign(new Error(`message larger than ${MAX_MAIL_BYTES} bytes`), { responseCode: 552 }))
          return
        }
        const html = typeof parsed.html === 'string' ? parsed.html : null
        const text = parsed.text ?? ''
        received += 1
        keep({
          id: String(received),
          receivedAt: new Date().toISOString(),
          envelope: {
            from: envelopeAddress(session.envelope.mailFrom),
            to: session.envelope.rcptTo.map((address) => address.address)
          },
          from: addressText(parsed.from),
          to: addressText(parsed.to),
          subject: parsed.subject ?? '',
          text,
          html,
          links: extractLinks(html, text),
          source: 'smtp'
        })
        callback()
      }, (err: unknown) => {
        callback(err instanceof Error ? err : new Error(String(err)))
      })
    }
  })

  const http = Fastify({ logger: false })
  http.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store')
    reply.header('x-content-type-options', 'nosniff')
  })
  http.get('/', async (_request, reply) => {
    reply.header('content-security-policy', PAGE_CSP)
    reply.type('text/html; charset=utf-8')
    return renderPage(mails, { smtpPort: smtpAddress().port, limit })
  })
  http.get('/messages.json', async () => mails)
  await http.register(formbody, { bodyLimit: 4096 })
  const resend = registerResendApi(http, mails, keep, options.resend ?? {})
  registerWebhookNotices(http, keep)
  http.delete('/messages.json', async (_request, reply) => {
    mails.length = 0
    return await reply.code(204).send()
  })

  function smtpAddress (): AddressInfo {
    return smtp.server.address() as AddressInfo
  }

  try {
    await new Promise<void>((resolve, reject) => {
      smtp.once('error', reject)
      smtp.listen(options.smtpPort ?? 0, LOOPBACK, () => {
        smtp.off('error', reject)
        resolve()
      })
    })
    await http.listen({ host: LOOPBACK, port: options.httpPort ?? 0 })
  } catch (err) {
    await Promise.all([http.close(), new Promise<void>((resolve) => { smtp.close(() => resolve()) })])
    throw err
  }
  // A client that drops its connection is reported as an error of the server; the catcher
  // carries on serving the others.
  smtp.on('error', () => {})

  const httpAddress = http.server.address() as AddressInfo
  return {
    smtpPort: smtpAddress().port,
    url: `http://${LOOPBACK}:${httpAddress.port}`,
    messages: () => [...mails],
    sendWebhook: resend.sendWebhook,
    setWebhookTarget: resend.setWebhookTarget,
    close: async () => {
      await Promise.all([
        http.close(),
        new Promise<void>((resolve) => { smtp.close(() => resolve()) })
      ])
    }
  }
}
