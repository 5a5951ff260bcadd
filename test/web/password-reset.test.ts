// Forgot and reset password in the browser, the way a user does it: ?auth=forgot gives the same
// answer for every email; the backend sends the reset email over SMTP to the mail catcher
// (dev/mail); the link in that email, clicked on the mail catcher's page, opens the reset dialog
// with the token taken out of the address bar, and the new password works.
import { test } from 'tap'
import type { BrowserContext, Page } from 'playwright-core'
import { launchBrowser, newContext } from './browser.js'
import { startWebStack } from './stack.js'
import { signInThroughUi, signUpThroughUi } from './ui.js'
import { uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'
import type { CaughtMail } from '../../dev/mail/index.js'

// Read over HTTP, as any other program reading the mail catcher would.
async function caughtMails (mailUrl: string): Promise<CaughtMail[]> {
  const response = await fetch(`${mailUrl}/messages.json`)
  if (!response.ok) throw new Error(`mail catcher answered ${response.status}`)
  return await response.json() as CaughtMail[]
}

/**
 * Opens the mail catcher's page and clicks the link inside the mail's HTML body, the part a mail
 * program shows. The page opens mail links in a new tab; that tab is returned.
 */
async function clickLinkInMail (context: BrowserContext, mailUrl: string, mail: CaughtMail, href: string): Promise<Page> {
  const inbox = await context.newPage()
  await inbox.goto(mailUrl)
  const body = inbox.locator(`#mail-${mail.id}`).frameLocator('iframe[title="HTML body"]')
  const [opened] = await Promise.all([
    context.waitForEvent('page'),
    body.locator(`a[href="${href}"]`).first().click()
  ])
  await opened.waitForLoadState('domcontentloaded')
  await inbox.close()
  return opened
}

test('forgot password, then reset from the emailed link, then sign in with the new password', async (t) => {
  const stack = await startWebStack(t, { mail: true })
  const mailer = stack.mail
  if (mailer === undefined) throw new Error('the stack was started without its mail catcher')
  const browser = await launchBrowser(t)
  const context = await newContext(browser)
  // The reset link opens a new tab, whose first errors could come before a listener on it: these
  // listen on the whole profile. The mail catcher's own page is not the client's and is left out.
  const errors: string[] = []
  const isMailPage = (page: Page | null) => page?.url().startsWith(mailer.url) === true
  context.on('weberror', (error) => { if (!isMailPage(error.page())) errors.push(error.error().message) })
  context.on('console', (message) => { if (message.type() === 'error' && !isMailPage(message.page())) errors.push(message.text()) })
  const page = await context.newPage()
  const email = uniqueEmail('reset')
  const nobody = uniqueEmail('nobody')
  await signUpThroughUi(page, stack.webUrl, { name: 'Reset', email, password: 'old password 1' })
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.getByRole('button', { name: 'Sign in' }).waitFor()

  const answers: string[] = []
  for (const address of [nobody, email]) {
    await page.goto(`${stack.webUrl}/day?auth=forgot`)
    t.equal(new URL(page.url()).search, '', 'the auth parameter left the URL')
    const dialog = page.getByRole('dialog', { name: 'Reset your password' })
    await dialog.getByLabel('Email').fill(address)
    await dialog.getByRole('button', { name: 'Send reset link' }).click()
    answers.push(String(await dialog.getByRole('status').textContent()))
  }
  t.equal(answers[0], answers[1], 'the same answer for an unknown and a known email')
  t.match(answers[1], /If an account exists/)

  const resetMailsTo = async (address: string) => (await caughtMails(mailer.url))
    .filter((mail) => mail.envelope.to.includes(address) && mail.subject === 'Password reset instructions')
  t.ok(await waitFor(async () => (await resetMailsTo(email)).length === 1, 10_000), 'the reset email reached the mail catcher over SMTP')
  const [mail] = await resetMailsTo(email)
  if (mail === undefined) throw new Error('no reset email for the account: nothing more can be tested')
  t.same(mail.envelope.to, [email], 'addressed to the account only')
  t.equal(mail.envelope.from, 'calendar@localhost', 'sent from the configured sender')
  t.not(mail.html, null, 'with an HTML body a mail program shows')

  // Every link of the email is the reset link: a wrong one anywhere in it is a wrong email.
  t.equal(mail.links.length, 1, 'the email carries one link')
  const emailedLink = mail.links[0] ?? 'http://missing.invalid/'
  const link = new URL(emailedLink)
  t.equal(`${link.origin}${link.pathname}`, `${stack.webUrl}/day`, 'the link leads to this web client\'s /day (web.url)')
  t.same([...link.searchParams.keys()].sort(), ['auth', 'token'], 'and carries only auth and token')
  t.equal(link.searchParams.get('auth'), 'reset')
  t.match(link.searchParams.get('token') ?? '', /^[\w-]{20,}$/, 'with the reset token')
  t.ok(mail.text.includes(emailedLink), 'the text body has the same link')

  const reset = await clickLinkInMail(context, mailer.url, mail, emailedLink)
  const dialog = reset.getByRole('dialog', { name: 'Choose a new password' })
  await dialog.waitFor()
  t.equal(reset.url(), `${stack.webUrl}/day`, 'the token and the auth parameter left the address bar')
  await dialog.getByLabel('New password').fill('new password 2')
  // The session SDK reads the token from the address bar: this succeeds only because the client
  // puts the captured token back there for the submission.
  await dialog.getByRole('button', { name: 'Save password' }).click()
  await dialog.getByRole('status').filter({ hasText: 'Your password is changed' }).waitFor()
  t.equal(reset.url(), `${stack.webUrl}/day`, 'and the token is not left behind after the submission')
  await dialog.getByRole('button', { name: 'Sign in' }).click()

  await signInThroughUi(reset, { email, password: 'old password 1' })
  await reset.getByRole('dialog', { name: 'Sign in' }).getByRole('alert').filter({ hasText: 'not right' }).waitFor()
  t.pass('the old password no longer works')
  await signInThroughUi(reset, { email, password: 'new password 2' })
  await reset.getByText(email, { exact: true }).waitFor()
  t.pass('the new password signs in')

  const reused = await clickLinkInMail(context, mailer.url, mail, emailedLink)
  const again = reused.getByRole('dialog', { name: 'Choose a new password' })
  await again.getByLabel('New password').fill('third password 3')
  await again.getByRole('button', { name: 'Save password' }).click()
  await again.getByRole('alert').filter({ hasText: 'expired or was already used' }).waitFor()
  t.pass('a used link is refused with a clear message')

  t.same(await resetMailsTo(nobody), [], 'no reset email for the unknown address')
  t.same((await caughtMails(mailer.url)).map((caught) => caught.subject), ['Password reset instructions'], 'and no other email at all')
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
