import { randomBytes, randomUUID } from 'node:crypto'
import Fastify from 'fastify'
import { test } from 'tap'
import { Webhook } from 'standardwebhooks'
import { startMailCatcher, type CaughtMail } from '../../dev/mail/index.js'

// The mail catcher's subset of Resend's API (POST /emails). The first test is a conformance suite
// that also runs against Resend itself: RESEND_API_KEY=re_... npx tap test/dev/mail-resend.test.ts
// (it sends to Resend's test address delivered@resend.dev from onboarding@resend.dev, which need no
// domain of one's own). The rest are about the catcher: where the mails show, and its webhooks.

const REAL_KEY = process.env.RESEND_API_KEY

test('POST /emails: bearer key, validation, and the Idempotency-Key', async (t) => {
  let base: string
  let key: string
  if (REAL_KEY !== undefined) {
    base = process.env.RESEND_API_BASE ?? 'https://api.resend.com'
    key = REAL_KEY
  } else {
    key = `re_${randomBytes(8).toString('hex')}`
    const catcher = await startMailCatcher({ resend: { apiKey: key } })
    t.teardown(() => catcher.close())
    base = catcher.url
  }
  const mail = { from: 'Calendar <onboarding@resend.dev>', to: ['delivered@resend.dev'], subject: 'Conformance', html: '<p>hello</p>', text: 'hello', headers: { 'List-Unsubscribe': '<https://example.com/u>' }, tags: [{ name: 'step', value: 'welcome' }] }
  const post = async (body: unknown, headers: Record<string, string> = {}) => await fetch(`${base}/emails`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body)
  })

  const noKey = await fetch(`${base}/emails`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(mail) })
  t.equal(noKey.status, 401)
  t.equal((await noKey.json() as { name: string }).name, 'missing_api_key')
  const wrongKey = await fetch(`${base}/emails`, { method: 'POST', headers: { authorization: 'Bearer re_not_a_key', 'content-type': 'application/json' }, body: JSON.stringify(mail) })
  t.equal(wrongKey.status, 403, 'a key that is not the account\'s')
  t.equal((await wrongKey.json() as { name: string }).name, 'invalid_api_key')

  const noTo = await post({ ...mail, to: undefined })
  t.equal(noTo.status, 422)
  t.equal((await noTo.json() as { name: string }).name, 'missing_required_field')

  const idempotencyKey = `conformance/${randomUUID()}`
  const first = await post(mail, { 'idempotency-key': idempotencyKey })
  t.equal(first.status, 200)
  const { id } = await first.json() as { id: string }
  t.match(id, /^[0-9a-f-]{36}$/, 'the mail\'s id')
  const again = await post(mail, { 'idempotency-key': idempotencyKey })
  t.equal(again.status, 200)
  t.same(await again.json(), { id }, 'the same key and body: the same answer, and no second mail')
  const changed = await post({ ...mail, subject: 'Changed' }, { 'idempotency-key': idempotencyKey })
  t.equal(changed.status, 409)
  t.equal((await changed.json() as { name: string }).name, 'invalid_idempotent_request')

  if (REAL_KEY === undefined) {
    const caught = await (await fetch(`${base}/messages.json`)).json() as CaughtMail[]
    t.equal(caught.length, 1, 'one mail for the key')
    t.equal(caught[0]?.id, id)
  }
})

test('the catcher shows API mails beside SMTP ones, and signs webhooks the Svix way', async (t) => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`
  const received: Array<{ headers: Record<string, string | string[] | undefined>, body: string }> = []
  const backend = Fastify()
  backend.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => { done(null, body) })
  backend.post('/hook', async (request) => {
    received.push({ headers: request.headers, body: String(request.body) })
    return { received: true }
  })
  await backend.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => backend.close())
  const address = backend.server.address() as { port: number }

  const catcher = await startMailCatcher({ resend: { webhook: { url: `http://127.0.0.1:${address.port}/hook`, secret } } })
  t.teardown(() => catcher.close())
  const sent = await fetch(`${catcher.url}/emails`, {
    method: 'POST',
    headers: { authorization: 'Bearer re_any', 'content-type': 'application/json' },
    body: JSON.stringify({ from: 'a@example.com', to: 'b@example.com', subject: 'Hi <there>', text: 'Open https://example.com/x', headers: { 'List-Unsubscribe': '<https://example.com/u>' }, tags: [{ name: 'user_id', value: 'u1' }] })
  })
  const { id } = await sent.json() as { id: string }
  const [mail] = catcher.messages()
  t.equal(mail?.source, 'api')
  t.same(mail?.envelope.to, ['b@example.com'])
  t.same(mail?.links, ['https://example.com/x'])
  t.same(mail?.tags, { user_id: 'u1' })

  t.same(await catcher.sendWebhook(id, 'email.bounced'), { status: 200 })
  const [hook] = received
  const payload = new Webhook(secret).verify(hook?.body ?? '', {
    'webhook-id': String(hook?.headers['svix-id']),
    'webhook-timestamp': String(hook?.headers['svix-timestamp']),
    'webhook-signature': String(hook?.headers['svix-signature'])
  }) as { type: string, data: { email_id: string, tags: Record<string, string>, to: string[] } }
  t.equal(payload.type, 'email.bounced')
  t.equal(payload.data.email_id, id)
  t.same(payload.data.tags, { user_id: 'u1' })
  t.same(payload.data.to, ['b@example.com'])

  const page = await (await fetch(catcher.url)).text()
  t.match(page, /Hi &lt;there&gt;/, 'escaped')
  t.match(page, /<dt>List-Unsubscribe<\/dt><dd>&lt;https:\/\/example\.com\/u&gt;<\/dd>/)
  t.match(page, /<button type="submit">Send email\.complained<\/button>/)
  t.match(page, /email\.bounced: backend answered 200/)

  const viaForm = await fetch(`${catcher.url}/control/webhooks`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `mailId=${id}&type=email.delivered` })
  t.equal(viaForm.status, 303)
  t.equal(viaForm.headers.get('location'), `/#mail-${id}`)
  t.equal(received.length, 2)
  const refused = await fetch(`${catcher.url}/control/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ mailId: id, type: 'email.opened' }) })
  t.equal(refused.status, 400)
  const unknown = await fetch(`${catcher.url}/control/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ mailId: 'nope', type: 'email.delivered' }) })
  t.equal(unknown.status, 409)
  catcher.setWebhookTarget(undefined)
  t.same(await catcher.sendWebhook(id, 'email.delivered'), { error: 'no webhook endpoint is set' })
  const badIdempotency = await fetch(`${catcher.url}/emails`, { method: 'POST', headers: { authorization: 'Bearer re_any', 'content-type': 'application/json', 'idempotency-key': 'k'.repeat(257) }, body: JSON.stringify({ from: 'a@example.com', to: 'b@example.com', subject: 's', text: 't' }) })
  t.equal(badIdempotency.status, 400)
  const noBody = await fetch(`${catcher.url}/emails`, { method: 'POST', headers: { authorization: 'Bearer re_any', 'content-type': 'application/json' }, body: JSON.stringify({ from: 'a@example.com', to: 'b@example.com', subject: 's' }) })
  t.equal(noBody.status, 422)
})
