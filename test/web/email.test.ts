// The welcome sequence as a person meets it: sign up in the browser, the welcome mail arrives at
// the mail catcher through Resend's API, its unsubscribe link opens a confirm page, and confirming
// stops the rest of the sequence. A mail client's one-click POST does the same for another user.
import { randomBytes } from 'node:crypto'
import { test } from 'tap'
import { launchBrowser, newContext } from './browser.js'
import { startWebStack } from './stack.js'
import { signUpThroughUi } from './ui.js'
import { signUp, uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'
import type { CaughtMail } from '../../dev/mail/index.js'
import type { EmailSendDocument } from '../../stores/email.js'

async function welcomeMailTo (mailUrl: string, address: string): Promise<CaughtMail | undefined> {
  const response = await fetch(`${mailUrl}/messages.json`)
  const mails = await response.json() as CaughtMail[]
  return mails.find((mail) => mail.source === 'api' && mail.envelope.to.includes(address) && mail.subject === 'Welcome to Calendar')
}

test('sign up, get the welcome mail, unsubscribe from its link; one-click for another user', async (t) => {
  const stack = await startWebStack(t, { email: { webhookSecret: `whsec_${randomBytes(24).toString('base64')}` } })
  const mailer = stack.mail!
  const sends = stack.backend.app.mongo.db.collection<EmailSendDocument>('emailSends')
  const browser = await launchBrowser(t)
  const context = await newContext(browser)
  const page = await context.newPage()

  const address = uniqueEmail('welcome')
  await signUpThroughUi(page, stack.webUrl, { name: 'Grace', email: address, password: 'welcome password 1' })
  let mail: CaughtMail | undefined
  t.ok(await waitFor(async () => (mail = await welcomeMailTo(mailer.url, address)) !== undefined, 15_000), 'the welcome mail reached the mail catcher')
  if (mail === undefined) throw new Error('no welcome mail: nothing more can be tested')
  // Sent before Grace proved the address: the name typed at sign-up waits for that.
  t.match(mail.text, /^Hello,\n/)
  t.notMatch(mail.text, /Grace/)
  t.not(mail.html, null, 'an HTML part')
  const link = mail.headers?.['List-Unsubscribe']?.replace(/^<|>$/g, '') ?? ''
  t.ok(mail.links.includes(link), 'the body links to the List-Unsubscribe address')
  t.equal(mail.headers?.['List-Unsubscribe-Post'], 'List-Unsubscribe=One-Click')

  // On the mail catcher's page, as a person reads it: the vendor's delivery report for this mail
  // comes back signed, then the unsubscribe link in the mail's HTML opens a page that asks first.
  const inbox = await context.newPage()
  await inbox.goto(mailer.url)
  const section = inbox.locator(`#mail-${mail.id}`)
  await section.getByRole('button', { name: 'Send email.delivered' }).click()
  await section.getByText('email.delivered: backend answered 200').waitFor()
  t.ok((await sends.findOne({ vendorMessageId: mail.id }))?.deliveredAt, 'the delivery is recorded on the welcome row')
  const [unsubscribePage] = await Promise.all([
    context.waitForEvent('page'),
    section.frameLocator('iframe[title="HTML body"]').locator(`a[href="${link}"]`).click()
  ])
  await unsubscribePage.waitForLoadState('domcontentloaded')
  t.equal(unsubscribePage.url(), link)
  await unsubscribePage.getByRole('heading', { name: 'Unsubscribe from Calendar mails?' }).waitFor()
  const userId = new URL(link).searchParams.get('token')!.split('.')[0]!
  t.equal(await sends.countDocuments({ userId, state: 'queued' }), 3, 'opening the link changed nothing')
  await unsubscribePage.getByRole('button', { name: 'Unsubscribe' }).click()
  await unsubscribePage.getByRole('heading', { name: 'You are unsubscribed' }).waitFor()
  t.same((await sends.find({ userId }).sort({ _id: 1 }).toArray()).map((row) => [row.step, row.state]),
    [['booking', 'canceled'], ['connect-calendar', 'canceled'], ['shortcuts', 'canceled'], ['welcome', 'sent']], 'the rest of the sequence is canceled')

  // Another user, and a mail client's RFC 8058 one-click POST to the header's address.
  const other = uniqueEmail('oneclick')
  const otherUser = await signUp(stack.backend.app, { email: other, password: 'one click password 1' })
  let otherMail: CaughtMail | undefined
  t.ok(await waitFor(async () => (otherMail = await welcomeMailTo(mailer.url, other)) !== undefined, 15_000))
  const otherLink = otherMail?.headers?.['List-Unsubscribe']?.replace(/^<|>$/g, '') ?? ''
  const oneClick = await fetch(otherLink, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' })
  t.equal(oneClick.status, 200)
  t.equal(await sends.countDocuments({ userId: otherUser.userId, state: 'canceled' }), 3)
  t.equal(await sends.countDocuments({ userId: otherUser.userId, state: 'queued' }), 0)
})
