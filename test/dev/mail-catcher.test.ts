import { existsSync } from 'node:fs'
import { connect } from 'node:net'
import nodemailer from 'nodemailer'
import { chromium } from 'playwright-core'
import { test } from 'tap'
import { startMailCatcher, type CaughtMail, type MailCatcher } from '../../dev/mail/index.js'
import { escapeHtml, extractLinks, renderPage, textWithLinks } from '../../dev/mail/page.js'

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

test('a taken port is reported and nothing is left listening', async (t) => {
  const first = await startMailCatcher()
  t.teardown(first.close)
  await t.rejects(startMailCatcher({ smtpPort: first.smtpPort }), { code: 'EADDRINUSE' })
  const httpPort = Number(new URL(first.url).port)
  await t.rejects(startMailCatcher({ httpPort }), { code: 'EADDRINUSE' })
})
