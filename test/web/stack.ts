// The whole system for browser tests, on free ports of 127.0.0.1: the MongoDB and session-core
// stand-ins, the real Sync service, the backend app listening, and the web client served by
// web/server.ts with the backend's web.url pointing at it. With `mail`, the backend also delivers
// its account emails over SMTP to a mail catcher (dev/mail), as the local stack does.
import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { buildApp, freePort, startDependencies, type BuiltApp, type Teardown } from '../helper.js'
import { startSyncService, type SyncService } from '../events/sync-service.js'
import { startWebServer, type WebServer } from '../../web/server.js'
import { startMailCatcher, type MailCatcher } from '../../dev/mail/index.js'
import { OUTBOX_COLLECTION } from '../../stores/outbox.js'
import { decodeCursor } from '../../sync/lib/feed-cursor.js'
import { waitUntil } from '../processes.js'
import { EVENTUALLY_MS } from './ui.js'

export interface WebStack {
  webUrl: string
  apiUrl: string
  backend: BuiltApp
  sync: SyncService
  web: WebServer
  /** Present when the stack was started with `mail: true`. */
  mail?: MailCatcher
  /**
   * Resolves once every change of the user's account so far has reached Sync's change feed (the
   * backend's outbox holds none of theirs) and the backend has read that feed to its end, so each
   * went out as a message on the streams open then: a stream opened afterwards gets none of them.
   */
  changesDelivered: (userId: string) => Promise<void>
}

export interface WebStackOptions {
  pollIntervalMs?: number
  webValues?: { googleClientId?: string }
  /** Deliver account emails over SMTP to a mail catcher instead of only logging their links. */
  mail?: boolean
  /**
   * Turn the email block on as dev/start.ts does: the mailer speaks Resend's API to the mail
   * catcher (started for it), whose webhooks come back signed; days of the sequence are minutes.
   */
  email?: { webhookSecret: string }
  /** More configuration blocks (for example `billing`), validated like the rest. */
  extra?: Record<string, unknown>
}

export async function startWebStack (t: Teardown, options: WebStackOptions = {}): Promise<WebStack> {
  const test = t as Test
  const deps = await startDependencies(test, { replicaSet: true })
  const sync = await startSyncService(test, deps.databaseUri(`sync_${randomBytes(4).toString('hex')}`))
  const [backendPort, webPort] = [await freePort(), await freePort()]
  const webUrl = `http://127.0.0.1:${webPort}`
  const apiUrl = `http://127.0.0.1:${backendPort}/api`
  let mail: MailCatcher | undefined
  const apiKey = `re_${randomBytes(12).toString('hex')}`
  if (options.mail === true || options.email !== undefined) {
    const catcher = await startMailCatcher(options.email === undefined
      ? {}
      : { resend: { apiKey, webhook: { url: `${apiUrl}/email/webhooks/resend`, secret: options.email.webhookSecret } } })
    t.teardown(() => catcher.close())
    mail = catcher
  }
  const backend = await buildApp(test, deps, {
    syncUrl: sync.url,
    internalAuthToken: sync.internalAuthToken,
    ...(options.extra === undefined ? {} : { extra: options.extra }),
    // Only the `test` environment skips delivery (specification, "Password reset delivery" 2), so
    // a stack that really sends runs as `development`, like `npm start`.
    ...(mail === undefined ? {} : { nodeEnv: 'development' as const })
  }, (config) => ({
    ...config,
    web: { ...config.web, url: webUrl },
    backend: { ...config.backend, apiUrl, originsAllowed: [webUrl] },
    // As dev/start.ts wires it. The catcher takes any login, but nodemailer will not log in to a
    // server that offers AUTH with an empty password.
    ...(mail === undefined
      ? {}
      : {
          sessions: {
            ...config.sessions,
            smtp: { host: '127.0.0.1', port: mail.smtpPort, secure: false, user: 'calendar', password: 'mail-catcher', fromName: 'Calendar (test)', fromEmail: 'calendar@localhost' }
          }
        }),
    ...(mail === undefined || options.email === undefined
      ? {}
      : {
          email: {
            provider: 'mailer' as const,
            apiKey,
            from: 'Calendar (test) <calendar@localhost>',
            webhookSecret: options.email.webhookSecret,
            unsubscribeSecret: randomBytes(16).toString('hex'),
            scheduleProfile: 'fast' as const,
            allowlist: [],
            apiBase: mail.url
          }
        })
  }), undefined, options.email === undefined ? {} : { email: { pollIntervalMs: 250 } })
  // How far the backend has read each user's change feed (the position in the cursors Sync answers):
  // the streams are written as soon as a page is read, so this is how far they have been told.
  const feedRead = new Map<string, number>()
  const syncClient = backend.app.syncClient
  const changesBatch = syncClient.changesBatch.bind(syncClient)
  syncClient.changesBatch = async (...args) => {
    const pages = await changesBatch(...args)
    for (const page of pages) {
      const position = decodeCursor(page.userId, page.cursor)
      if (position !== null) feedRead.set(page.userId, Math.max(position.seq, feedRead.get(page.userId) ?? 0))
    }
    return pages
  }
  const changesDelivered = async (userId: string): Promise<void> => {
    const outbox = backend.app.mongo.db.collection(OUTBOX_COLLECTION)
    await waitUntil(async () => await outbox.countDocuments({ user: userId }) === 0, `the outbox to deliver ${userId}'s changes to Sync`, EVENTUALLY_MS)
    const counter = await sync.db.collection<{ _id: string, seq: number }>('changeFeedCounters').findOne({ _id: userId })
    const last = counter?.seq ?? 0
    await waitUntil(() => (feedRead.get(userId) ?? 0) >= last, `the change feed of ${userId} to be read up to ${last}`, EVENTUALLY_MS)
  }
  await backend.app.listen({ port: backendPort, host: '127.0.0.1' })
  // Tests wait for stream fan-out; a shorter poll keeps them quick without changing what happens.
  backend.app.changeFeed.configure({ pollIntervalMs: options.pollIntervalMs ?? 250 })
  const web = await startWebServer({ port: webPort, apiUrl, ...options.webValues })
  t.teardown(() => web.close())
  return { webUrl, apiUrl, backend, sync, web, changesDelivered, ...(mail === undefined ? {} : { mail }) }
}
