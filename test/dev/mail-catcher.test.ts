import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { createServer } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import nodemailer from 'nodemailer'
import { chromium } from 'playwright-core'
import { test } from 'tap'
import { startMailCatcher, type CaughtMail, type MailCatcher } from '../../dev/mail/index.js'
import { escapeHtml, extractLinks, renderPage, textWithLinks } from '../../dev/mail/page.js'
import { ed25519KeyPair } from '../../lib/maintenance-token.js'
import { maintenanceLoop } from '../../lib/stack-steps.js'
import { waitFor } from '../processes.js'

// Sends the way the session library's SMTP service does: nodemailer, credentials always given,
// STARTTLS taken when offered.
async function send (catcher: MailCatcher, mail: { to: string, subject: string, text?: string, html?: string }): Promise<void> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: catcher.smtpPort,
    secure: false,
    auth: { user: 'calendar@localhost', pass: 'any-password' }
  })
  try {
    await transport.sendMail({ from: 'Calendar <calendar@localhost>', ...mail })
  } finally {
    transport.close()
  }
}

async function messages (catcher: MailCatcher): Promise<CaughtMail[]> {
  const response = await fetch(`${catcher.url}/messages.json`)
  return await response.json() as CaughtMail[]
}

// The server's answer to EHLO, read over a raw connection.
async function ehlo (port: number): Promise<string> {
  return await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('error', reject)
    socket.on('data', (chunk: string) => {
      answer += chunk
      if (/^220 /m.test(answer) && !answer.includes('EHLO sent')) {
        answer += 'EHLO sent\n'
        socket.write('EHLO test.local\r\n')
      }
      if (/^250 /m.test(answer)) {
        socket.end('QUIT\r\n')
        resolve(answer)
      }
    })
  })
}

test('mail sent with credentials over plain SMTP is kept and served as JSON, newest first', async (t) => {
  const catcher = await startMailCatcher()
  t.teardown(catcher.close)

  const greeting = await ehlo(catcher.smtpPort)
  t.match(greeting, /^250[- ]AUTH .*PLAIN/m, 'a login is offered')
  t.notMatch(greeting, /STARTTLS/, 'no STARTTLS: a client would try it and fail on a self-signed certificate')

  await send(catcher, { to: 'first@example.com', subject: 'First', text: 'one' })
  await send(catcher, {
    to: 'Ada <ada@example.com>',
    subject: 'Password reset instructions',
    html: '<p>Click <a href="http://localhost:9080/day?auth=reset&amp;token=abc123">here</a>.</p>'
  })

  const list = await messages(catcher)
  t.equal(list.length, 2)
  const [reset, first] = list
  t.equal(reset?.subject, 'Password reset instructions', 'newest first')
  t.same(reset?.envelope, { from: 'calendar@localhost', to: ['ada@example.com'] })
  t.equal(reset?.to, '"Ada" <ada@example.com>')
  t.equal(reset?.from, '"Calendar" <calendar@localhost>')
  t.match(reset?.html, /<a href="http:\/\/localhost:9080\/day\?auth=reset&amp;token=abc123">/)
  t.match(reset?.text, 'here', 'a text version made from the HTML')
  t.same(reset?.links, ['http://localhost:9080/day?auth=reset&token=abc123'], 'the link, with its entities decoded')
  t.match(reset?.receivedAt, /^\d{4}-\d\d-\d\dT.*Z$/)
  t.equal(first?.text.trim(), 'one')
  t.equal(first?.html, null)
  t.same(catcher.messages(), list, 'the same list in process')

  const cleared = await fetch(`${catcher.url}/messages.json`, { method: 'DELETE' })
  t.equal(cleared.status, 204)
  t.same(await messages(catcher), [])
})

test('only the latest mails are kept', async (t) => {
  const catcher = await startMailCatcher({ limit: 2 })
  t.teardown(catcher.close)
  for (const n of [1, 2, 3]) await send(catcher, { to: 'x@example.com', subject: `mail ${n}`, text: String(n) })
  t.same((await messages(catcher)).map((mail) => mail.subject), ['mail 3', 'mail 2'])
})

test('the page lists the mails and cannot be made to run a mail\'s script', async (t) => {
  const catcher = await startMailCatcher()
  t.teardown(catcher.close)
  const hostile = '<script>alert("body")</script><img src=x onerror=alert(1)>"></iframe><script>alert(2)</script>'
  await send(catcher, {
    to: 'victim@example.com',
    subject: '<script>alert("subject")</script>',
    text: 'Reset: http://localhost:9080/day?auth=reset&token=t0k3n. <b>bold</b> "quoted"',
    html: `<html><head><title>x</title></head><body>${hostile}<a href="http://localhost:9080/day?auth=reset&amp;token=t0k3n">Reset</a></body></html>`
  })

  const response = await fetch(catcher.url)
  t.equal(response.status, 200)
  t.match(response.headers.get('content-type'), /^text\/html/)
  const csp = response.headers.get('content-security-policy') ?? ''
  t.match(csp, "default-src 'none'", 'no script source allowed, should anything slip through')
  t.notMatch(csp, /script-src/)
  const page = await response.text()

  t.notMatch(page, /<script/i, 'no script element anywhere in the page')
  t.notMatch(page, /<img/i, 'no element from the mail outside the frame')
  t.match(page, '<td>victim@example.com</td>', 'listed with its recipient')
  t.match(page, '&lt;script&gt;alert(&quot;subject&quot;)&lt;/script&gt;', 'the subject shown as text')
  t.match(page, /<td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<\/td>/, 'and its time')

  const frames = [...page.matchAll(/<iframe ([^>]*)>/g)].map((match) => match[1] ?? '')
  t.equal(frames.length, 1, 'the HTML body in one frame')
  const frame = frames[0] ?? ''
  t.match(frame, /sandbox="allow-popups allow-popups-to-escape-sandbox"/)
  t.notMatch(frame, /allow-scripts|allow-same-origin/, 'the frame may not run scripts nor reach the page')
  const srcdoc = /srcdoc="([^"]*)"/.exec(frame)?.[1] ?? ''
  t.match(srcdoc, '&lt;script&gt;alert(&quot;body&quot;)&lt;/script&gt;', 'the body is inside the attribute, escaped')
  t.match(srcdoc, '&lt;head&gt;&lt;base target=&quot;_blank&quot;&gt;', 'its links open in a new tab')
  t.match(srcdoc, '&quot;&gt;&lt;/iframe&gt;', 'a quote in the body cannot end the attribute')

  t.match(page, '<a href="http://localhost:9080/day?auth=reset&amp;token=t0k3n" target="_blank" rel="noopener noreferrer">',
    'the reset link is clickable outside the frame too')
  t.match(page, '&lt;b&gt;bold&lt;/b&gt; &quot;quoted&quot;', 'the text body is escaped')
})

const BROWSER = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium'

test('in a browser, a mail\'s script does not run and its link opens in a new tab', { skip: existsSync(BROWSER) ? false : `no browser at ${BROWSER}` }, async (t) => {
  const catcher = await startMailCatcher()
  t.teardown(catcher.close)
  await send(catcher, {
    to: 'ada@example.com',
    subject: 'Password reset instructions',
    html: '<!doctype html><html><head><title>reset</title></head><body><p id="state">untouched</p>' +
      '<script>document.getElementById("state").textContent = "script ran"; parent.document.title = "taken over"</script>' +
      `<a id="reset" href="${catcher.url}/messages.json?from=mail">Reset your password</a></body></html>`
  })

  const browser = await chromium.launch({ executablePath: BROWSER, args: ['--no-sandbox'] })
  t.teardown(async () => { await browser.close() })
  const page = await browser.newPage()
  await page.goto(catcher.url)
  t.equal(await page.title(), 'Mail catcher (1)', 'the page is not changed by the mail')
  const frame = page.frames().find((candidate) => candidate !== page.mainFrame())
  t.ok(frame, 'the HTML body is shown in a frame')
  t.equal(await frame?.textContent('#state'), 'untouched', 'the mail\'s script did not run')
  t.equal(await frame?.evaluate('document.compatMode'), 'CSS1Compat', 'the mail keeps its standards mode')

  const [tab] = await Promise.all([page.waitForEvent('popup'), frame?.click('#reset')])
  await tab.waitForLoadState()
  t.equal(tab.url(), `${catcher.url}/messages.json?from=mail`, 'the link opened in a new tab')
})

test('escaping and link extraction as plain functions', async (t) => {
  t.equal(escapeHtml('<a href="x">\'&\'</a>'), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;')
  t.equal(textWithLinks('see http://a.example/x?y=1&z=2. <i>'),
    'see <a href="http://a.example/x?y=1&amp;z=2" target="_blank" rel="noopener noreferrer">http://a.example/x?y=1&amp;z=2</a>. &lt;i&gt;')
  t.equal(textWithLinks('javascript:alert(1)'), 'javascript:alert(1)', 'only http(s) becomes a link')
  t.same(extractLinks('<a href="javascript:alert(1)">x</a><a href=\'https://b.example/?a=1&#38;b=2\'>y</a>', 'and https://b.example/?a=1&b=2'),
    ['https://b.example/?a=1&b=2'], 'http(s) only, entities decoded, no duplicates')
  t.match(renderPage([], { smtpPort: 1025, limit: 100 }), 'No mail yet')
})

test('a webhook notice is kept as an entry of its own, escaped on the page', async (t) => {
  const catcher = await startMailCatcher()
  t.teardown(catcher.close)
  const hook = `${catcher.url}/hooks/maintenance`
  const post = async (body: string, contentType = 'application/json') => await fetch(hook, { method: 'POST', headers: { 'content-type': contentType }, body })
  const notice = { text: 'Calendar: watch maintenance failed (<script>alert("x")</script>)', event: 'maintenance_failed', reason: '<img src=x onerror=alert(1)>', at: '2026-01-02T03:04:05.000Z' }
  const taken = await post(JSON.stringify(notice))
  t.equal(taken.status, 201)
  const { id } = await taken.json() as { id: string }

  const [entry] = await messages(catcher)
  t.match(entry, { id, source: 'webhook', subject: notice.text, to: 'POST /hooks/maintenance', from: 'webhook notice: maintenance_failed', notice, links: [] }, 'listed beside the mails, titled with its text')
  t.same(JSON.parse(entry?.text ?? '{}'), notice, 'with the whole notice as its body')

  const page = await (await fetch(catcher.url)).text()
  t.notMatch(page, /<script|<img/i, 'nothing of the notice is markup on the page')
  t.match(page, `<h2>${escapeHtml(notice.text)}</h2>\n<p><strong>Webhook notice</strong>`, 'a section of its own, marked as a notice')
  t.match(page, `<a href="#mail-${id}">Calendar: watch maintenance failed (&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;)</a>`, 'and a row in the list')

  t.equal((await post('text=a form', 'application/x-www-form-urlencoded')).status, 415, 'a form is no notice')
  t.equal((await post(JSON.stringify({ event: 'maintenance_failed' }))).status, 400, 'nor JSON without a text')
  t.equal((await post(JSON.stringify({ text: 'x'.repeat(2001) }))).status, 400, 'nor a text longer than a notice')
  t.equal((await post(JSON.stringify({ text: 'big', padding: 'x'.repeat(20_000) }))).status, 413, 'the body is bounded')
  t.equal((await messages(catcher)).length, 1, 'none of those was kept')
})

// The compose scheduler's loop, as the local stack runs it: a refused call is reported at the
// mail catcher, and the loop goes on until it is stopped.
test('the maintenance loop reports a refused call at the mail catcher', async (t) => {
  const catcher = await startMailCatcher()
  t.teardown(catcher.close)
  let calls = 0
  const sync = createServer((request, response) => {
    calls += 1
    response.writeHead(calls === 1 ? 200 : 401, { 'content-type': 'application/json' })
    response.end(calls === 1 ? '{"renewed":1,"stopped":0,"failed":0}' : '{"error":"UNAUTHORIZED"}')
  })
  await new Promise<void>((resolve) => sync.listen(0, '127.0.0.1', resolve))
  t.teardown(() => sync.close())
  const url = `http://127.0.0.1:${(sync.address() as AddressInfo).port}/maintenance`
  const { privateJwk } = ed25519KeyPair(randomBytes(32))
  const lines: string[] = []
  const stop = new AbortController()
  const loop = maintenanceLoop({ url, audience: 'http://localhost/sync/maintenance', caller: 'scheduler@calendar.invalid', signingKey: privateJwk, failureWebhook: `${catcher.url}/hooks/maintenance` }, {
    everyMs: 50,
    log: { info: (line) => lines.push(`info ${line}`), error: (line) => lines.push(`error ${line}`) },
    signal: stop.signal
  })
  t.ok(await waitFor(() => catcher.messages().length > 0, 10_000), 'a notice arrived')
  stop.abort()
  await loop
  const [notice] = catcher.messages().reverse()
  t.match(notice?.notice, { event: 'maintenance_failed', reason: `maintenance: ${url} answered 401`, text: /^Calendar: watch maintenance failed/, at: /^\d{4}-/ })
  t.same(lines.slice(0, 3), [`info maintenance: calling ${url} every 0.05 s`, 'info maintenance: renewed 1, stopped 0, failed 0', `error maintenance: ${url} answered 401; trying again in 0.05 s`])
  t.notOk(lines.some((line) => line.includes(privateJwk.d)), 'the signing key is never said')
  const after = calls
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal(calls, after, 'no call after the loop was stopped')
})

test('a taken port is reported and nothing is left listening', async (t) => {
  const first = await startMailCatcher()
  t.teardown(first.close)
  await t.rejects(startMailCatcher({ smtpPort: first.smtpPort }), { code: 'EADDRINUSE' })
  const httpPort = Number(new URL(first.url).port)
  await t.rejects(startMailCatcher({ httpPort }), { code: 'EADDRINUSE' })
})
